; ant_trail: two ants walk one cell a step toward the nearest crumb of food; clicking a
; free cell drops a crumb; an ant standing on a crumb eats it.
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
    (= ants (updateObj ants (--> a (move a (unitVector a (closest a food)))))))

  (on (& clicked (isFreePos click)) (= food (addObj food (Food click))))
)
