; magnet_rail, changed: once the magnet has reached the right end of the rail, it pushes balls away.
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

  (: pushed Bool)
  (= pushed (initnext false (prev pushed)))
  (on (== (.. (.. magnet origin) x) 9) (= pushed true))

  (on (.. magnet active)
    (= balls (updateObj balls (--> b (let (= pull (unitVector b magnet)) (if pushed then (moveNoCollision b (- 0 (.. pull x)) (- 0 (.. pull y))) else (moveNoCollision b (.. pull x) (.. pull y))))))))
)
