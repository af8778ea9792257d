; sheep_pen, changed: once the gate has been opened, sheep next to the dog run toward it.
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 4)

  (object Fence (Cell 0 0 "gray"))
  (object Gate (: open Bool) (Cell 0 0 (if open then "black" else "sienna")))
  (object Sheep (Cell 0 0 "white"))
  (object Dog (Cell 0 0 "orange"))

  (: fence (List Fence))
  (= fence (initnext (map (--> p (Fence p))
                          (filter (--> p (& (| (| (== (.. p x) 0) (== (.. p x) 9)) (| (== (.. p y) 0) (== (.. p y) 9)))
                                            (! (& (== (.. p x) 9) (== (.. p y) 5)))))
                                  (allPositions 10)))
                     (prev fence)))

  (: gate Gate)
  (= gate (initnext (Gate false (Position 9 5)) (prev gate)))

  (: sheep (List Sheep))
  (= sheep (initnext (list (Sheep (Position 3 3)) (Sheep (Position 5 6)) (Sheep (Position 6 2))) (prev sheep)))

  (: dog Dog)
  (= dog (initnext (Dog (Position 1 8)) (prev dog)))

  (= moves (list (Position 1 0) (Position -1 0) (Position 0 1) (Position 0 -1) (Position 0 0)))
  (= wander (--> s (let (= stepDir (uniformChoice moves)) (moveNoCollision s (.. stepDir x) (.. stepDir y)))))
  (= flee (--> s (let (= away (unitVector dog s)) (moveNoCollision s (.. away x) (.. away y)))))
  (= blocked (--> p (| (! (isWithinBounds (Dog p))) (| (in p (map (--> o (.. o origin)) (vcat (list fence sheep)))) (& (== p (.. gate origin)) (! (.. gate open)))))))

  (on left (if (blocked (Position (- (.. (.. dog origin) x) 1) (.. (.. dog origin) y))) then dog else (= dog (moveLeft dog))))
  (on right (if (blocked (Position (+ (.. (.. dog origin) x) 1) (.. (.. dog origin) y))) then dog else (= dog (moveRight dog))))
  (on up (if (blocked (Position (.. (.. dog origin) x) (- (.. (.. dog origin) y) 1))) then dog else (= dog (moveUp dog))))
  (on down (if (blocked (Position (.. (.. dog origin) x) (+ (.. (.. dog origin) y) 1))) then dog else (= dog (moveDown dog))))

  (: opened Bool)
  (= opened (initnext false (prev opened)))
  (on (.. gate open) (= opened true))
  (on true (= sheep (updateObj sheep (--> s (if (adjacentTwoObjs s dog 1) then (if opened then (let (= toward (unitVector s dog)) (moveNoCollision s (.. toward x) (.. toward y))) else (flee s)) else (wander s))))))

  (on (clicked gate) (= gate (updateObj gate "open" (! (.. gate open)))))
)
