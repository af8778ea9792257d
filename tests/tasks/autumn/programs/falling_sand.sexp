; Clicks drop sand grains that fall until they rest; arrows move a grey shelf.
(program
  (= GRID_SIZE 10)
  (= background "white")
  (object Grain (Cell 0 0 "sandybrown"))
  (object Shelf (list (Cell 0 0 "gray") (Cell 1 0 "gray") (Cell 2 0 "gray")))
  (: grains (List Grain))
  (= grains (initnext (list) (updateObj (prev grains) nextSolid)))
  (= shelf (initnext (Shelf (Position 3 6)) (prev shelf)))
  (on (& clicked (isFreePos click)) (= grains (addObj grains (Grain click))))
  (on left (= shelf (moveLeftNoCollision shelf)))
  (on right (= shelf (moveRightNoCollision shelf)))
)
