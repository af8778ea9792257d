; tilt_box, changed: the gold switch sends blocks west instead of north.
(program
  (= GRID_SIZE 12)
  (= FRAME_RATE 6)

  (object Switch (: colour String) (Cell 0 0 colour))
  (object Block (Cell 0 0 "orange"))

  (: westSwitch Switch)
  (= westSwitch (initnext (Switch "red" (Position 0 6)) (prev westSwitch)))
  (: eastSwitch Switch)
  (= eastSwitch (initnext (Switch "blue" (Position 11 5)) (prev eastSwitch)))
  (: northSwitch Switch)
  (= northSwitch (initnext (Switch "gold" (Position 5 0)) (prev northSwitch)))
  (: southSwitch Switch)
  (= southSwitch (initnext (Switch "green" (Position 6 11)) (prev southSwitch)))

  (: blocks (List Block))
  (= blocks (initnext (list) (prev blocks)))

  (: pull String)
  (= pull (initnext "down" (prev pull)))

  (on (== pull "left") (= blocks (updateObj blocks (--> b (moveLeftNoCollision b)))))
  (on (== pull "right") (= blocks (updateObj blocks (--> b (moveRightNoCollision b)))))
  (on (== pull "up") (= blocks (updateObj blocks (--> b (moveUpNoCollision b)))))
  (on (== pull "down") (= blocks (updateObj blocks (--> b (moveDownNoCollision b)))))

  (on (& clicked (isFreePos click)) (= blocks (addObj blocks (Block (Position (.. click x) (.. click y))))))

  (on (clicked westSwitch) (= pull "left"))
  (on (clicked eastSwitch) (= pull "right"))
  (on (clicked northSwitch) (= pull "left"))
  (on (clicked southSwitch) (= pull "down"))
)
