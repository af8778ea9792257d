; seed_garden, changed: once three flowers are in the basket, new sprouts start as buds.
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 4)

  (object Soil (Cell 0 0 "saddlebrown"))
  (object Plant (: stage Number)
    (Cell 0 0 (if (== stage 0) then "green" else (if (== stage 1) then "yellow" else "hotpink"))))
  (object Mark (Cell 0 0 "hotpink"))

  (: soil (List Soil))
  (= soil (initnext (map (--> x (Soil (Position x 9))) (range 0 10)) (prev soil)))

  (: plants (List Plant))
  (= plants (initnext (list) (prev plants)))

  (: basket (List Mark))
  (= basket (initnext (list) (prev basket)))

  (= ripen (--> p (updateObj p "stage" (min 2 (+ (.. p stage) (uniformChoice (list 0 0 1)))))))

  (on true (= plants (updateObj plants ripen)))

  (on (& clicked (clicked soil))
    (let (= spot (Position (.. click x) 8))
         (if (isFreePos spot) then (= plants (addObj plants (Plant (if (>= (length basket) 3) then 1 else 0) spot))) else plants)))

  (on (clicked (filter (--> p (== (.. p stage) 2)) plants))
    (let (= basket (addObj basket (Mark (Position (length basket) 0))))
         (= plants (removeObj plants (--> p (& (== (.. p stage) 2) (clicked p)))))))
)
