; cloud_burst, changed: once grass has grown in four places, new rain falls two cells a step.
(program
  (= GRID_SIZE 12)
  (= FRAME_RATE 5)

  (object Cloud (list (Cell 0 0 "white") (Cell 1 0 "white")))
  (object Drop (Cell 0 0 "dodgerblue"))
  (object Earth (Cell 0 0 "saddlebrown"))
  (object Grass (Cell 0 0 "green"))

  (: earth (List Earth))
  (= earth (initnext (map (--> x (Earth (Position x 11))) (range 0 12)) (prev earth)))

  (: grass (List Grass))
  (= grass (initnext (list) (prev grass)))

  (: drops (List Drop))
  (= drops (initnext (list) (prev drops)))

  (: clouds (List Cloud))
  (= clouds (initnext (list (Cloud (Position 1 1)) (Cloud (Position 7 2))) (prev clouds)))

  (= drift (--> c (let (= dx (uniformChoice (list -1 0 0 1)))
                       (if (isWithinBounds (move c (Position dx 0))) then (move c (Position dx 0)) else c))))
  (= rainFrom (--> c (Drop (Position (.. (.. c origin) x) (+ (.. (.. c origin) y) 1)))))
  (= landed (--> d (== (.. (.. d origin) y) 10)))

  (on true
    (let (= grass (addObj grass (map (--> d (Grass (Position (.. (.. d origin) x) 11))) (filter landed drops))))
         (= drops (updateObj (filter (--> d (! (landed d))) drops) (--> d (if (& (>= (length grass) 4) (< (.. (.. d origin) y) 9)) then (moveDown (moveDown d)) else (moveDown d)))))))

  (on true (= clouds (updateObj clouds drift)))

  (on (== (uniformChoice (list 0 0 0 1)) 1) (= drops (addObj drops (map rainFrom clouds))))

  (on (clicked earth) (= earth (removeObj earth (--> e (clicked e)))))

  (on (clicked grass) (= grass (removeObj grass (--> g (clicked g)))))

  (on (clicked clouds) (= drops (addObj drops (map rainFrom (filter (--> c (clicked c)) clouds)))))
)
