; magnet_rail: a magnet slides along the bottom rail with the left and right arrows;
; clicking it switches it on (red) or off (purple). While it is on, every steel ball moves
; one cell a step toward it, sideways first, and stops when something is in the way.
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 5)

  (object Ball (Cell 0 0 "silver"))
  (object Magnet (: active Bool) (Cell 0 0 (if active then "red" else "purple")))

  (: balls (List Ball))
  (= balls (initnext (list (Ball (Position 1 1)) (Ball (Position 5 3)) (Ball (Position 8 2))) (prev balls)))

  (: magnet Magnet)
  (= magnet (initnext (Magnet false (Position 4 9)) (prev magnet)))

  (on (& left (> (.. (.. magnet origin) x) 0)) (= magnet (moveLeft magnet)))
  (on (& right (< (.. (.. magnet origin) x) 9)) (= magnet (moveRight magnet)))

  (on (clicked magnet) (= magnet (updateObj magnet "active" (! (.. magnet active)))))

  (on (.. magnet active)
    (= balls (updateObj balls (--> b (let (= pull (unitVector b magnet)) (moveNoCollision b (.. pull x) (.. pull y)))))))
)
