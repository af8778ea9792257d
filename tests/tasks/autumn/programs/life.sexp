; Conway's Game of Life on a small torus-free board; a click toggles a cell, "up" steps.
(program
  (= GRID_SIZE 7)
  (object Cellule (: alive Bool) (Cell 0 0 (if alive then "purple" else "black")))
  (= board (initnext
    (map (--> p (Cellule (in p (list (Position 1 2) (Position 2 2) (Position 3 2))) p))
         (allPositions GRID_SIZE))
    (prev board)))
  (= neighbours (--> (p living)
    (length (filter (--> q (& (<= (abs (- (.. q x) (.. p x))) 1)
                              (& (<= (abs (- (.. q y) (.. p y))) 1) (!= q p))))
                    living))))
  (on clicked (= board (updateObj board (--> c (updateObj c "alive" (! (.. c alive))))
                                  (--> c (clicked c)))))
  (on up (= board
    (let (= living (map (--> c (.. c origin)) (filter (--> c (.. c alive)) board)))
         (map (--> c (let (= n (neighbours (.. c origin) living))
                          (updateObj c "alive" (if (.. c alive) then (| (== n 2) (== n 3))
                                                   else (== n 3)))))
              board))))
)
