; ant_trail, changed: after the ants have eaten two crumbs, they walk away from the food.
(program
  (= GRID_SIZE 12)
  (= FRAME_RATE 5)

  (object Food (Cell 0 0 "limegreen"))
  (object Ant (Cell 0 0 "red"))

  (: food (List Food))
  (= food (initnext (list) (prev food)))

  (: ants (List Ant))
  (= ants (initnext (list (Ant (Position 2 2)) (Ant (Position 9 8))) (prev ants)))

  (: eaten Number)
  (= eaten (initnext 0 (prev eaten)))

  (on (intersects food ants)
    (let (= eaten (+ eaten (length (filter (--> f (intersects f ants)) food))))
         (= food (filter (--> f (! (intersects f ants))) food))))

  (on (> (length food) 0)
    (= ants (updateObj ants (--> a (if (>= eaten 2) then (moveNoCollision a (- 0 (.. (unitVector a (closest a food)) x)) (- 0 (.. (unitVector a (closest a food)) y))) else (move a (unitVector a (closest a food))))))))

  (on (& clicked (isFreePos click)) (= food (addObj food (Food click))))
)
