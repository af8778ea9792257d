; lamp_grid: a 5x5 board of lamps; clicking a lamp switches it and its four neighbours
; (lit lamps are yellow, dark ones navy).
(program
  (= GRID_SIZE 5)
  (= FRAME_RATE 4)

  (object Lamp (: lit Bool) (Cell 0 0 (if lit then "yellow" else "navy")))

  (: lamps (List Lamp))
  (= lamps (initnext (map (--> p (Lamp (in p (list (Position 1 1) (Position 3 1) (Position 2 2) (Position 1 3) (Position 3 3))) p))
                          (allPositions 5))
                     (prev lamps)))

  (: presses Number)
  (= presses (initnext 0 (prev presses)))

  (= flip (--> l (updateObj l "lit" (! (.. l lit)))))

  (on clicked
    (let (= lamps (updateObj lamps flip (--> l (adjacentPoss (.. l origin) click 1))))
         (= presses (+ presses 1))))
)
