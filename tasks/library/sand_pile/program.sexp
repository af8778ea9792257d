; sand_pile: clicking a free cell of the top row inside the box drops a grain of sand; a
; grain falls one cell per step; when blocked below it slides down-left if that side is
; clear, else down-right, so grains pile up in slopes (on the floor and on a stone ledge).
; The left and right arrows move a scoop along the floor; a grain it moves into is scooped
; away, and what rested on it slides after.
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 6)

  (object Grain (Cell 0 0 "gold"))
  (object Stone (Cell 0 0 "gray"))
  (object Scoop (Cell 0 0 "red"))

  (: grains (List Grain))
  (= grains (initnext (list) (prev grains)))

  (: scoop Scoop)
  (= scoop (initnext (Scoop (Position 2 8)) (prev scoop)))

  (: box (List Stone))
  (= box (initnext (map (--> p (Stone p))
                        (concat (list (list (Position 5 5) (Position 6 5) (Position 7 5))
                                      (map (--> i (Position 0 i)) (range 0 10))
                                      (map (--> i (Position 9 i)) (range 0 10))
                                      (map (--> i (Position i 9)) (range 1 9)))))
                   (prev box)))

  ; does a grain stand at (sx, sy), blocked below so that it may slide down-left?
  (= leftSlider (--> (sx sy) (& (< sx 9) (& (! (isFreePos (Position sx sy)))
                                          (& (! (& (== sy 5) (& (>= sx 5) (<= sx 7))))
                                             (! (isFreePos (Position sx (+ sy 1)))))))))

  (= fall (--> g
    (let (= gx (.. (.. g origin) x))
         (= gy (.. (.. g origin) y))
         (if (isFreePos (Position gx (+ gy 1))) then (Grain (Position gx (+ gy 1)))
           else (if (& (isFreePos (Position (- gx 1) (+ gy 1))) (isFreePos (Position (- gx 1) gy)))
                   then (Grain (Position (- gx 1) (+ gy 1)))
           else (if (& (& (isFreePos (Position (+ gx 1) (+ gy 1))) (isFreePos (Position (+ gx 1) gy)))
                       (! (leftSlider (+ gx 2) gy)))
                   then (Grain (Position (+ gx 1) (+ gy 1)))
           else g))))))

  ; false once a step has moved no grain: then nothing can move until the scoop moves or a
  ; grain is added (a shortcut that changes nothing visible)
  (: settling Bool)
  (= settling (initnext false (prev settling)))

  (on left (if (> (.. (.. scoop origin) x) 1) then (= scoop (moveLeft scoop)) else scoop))
  (on right (if (< (.. (.. scoop origin) x) 8) then (= scoop (moveRight scoop)) else scoop))

  (on (| settling (| left right))
    (let (= fallen (map fall grains))
         (= settling (!= fallen grains))
         (= grains fallen)))

  (on (| left right)
    (let (= kept (filter (--> g (!= (.. g origin) (.. scoop origin))) grains))
         (= settling true)
         (= grains kept)))

  (on (& clicked (& (== (.. click y) 0) (& (> (.. click x) 0) (< (.. click x) 9))))
    (if (any (--> g (== (.. g origin) click)) grains) then grains
      else (let (= settling true) (= grains (addObj grains (Grain click))))))
)
