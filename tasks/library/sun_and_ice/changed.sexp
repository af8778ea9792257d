; sun_and_ice, changed: while the sun is on the bottom row, water rises instead of falling.
(program
  (= GRID_SIZE 8)
  (= FRAME_RATE 4)

  (object Sun (Cell 0 0 "gold"))
  (object Ice (Cell 0 0 "lightblue"))
  (object Water (Cell 0 0 "blue"))

  (: ice (List Ice))
  (= ice (initnext (map (--> p (Ice p)) (list (Position 2 2) (Position 3 2) (Position 4 2) (Position 5 4) (Position 1 5)))
                   (prev ice)))

  (: water (List Water))
  (= water (initnext (list) (prev water)))

  (: sun Sun)
  (= sun (initnext (Sun (Position 0 0)) (prev sun)))

  (= nearSun (--> i (adjacentTwoObjs i sun 1)))

  (on left (= sun (moveLeftNoCollision sun)))
  (on right (= sun (moveRightNoCollision sun)))
  (on up (= sun (moveUpNoCollision sun)))
  (on down (= sun (moveDownNoCollision sun)))

  (on (!= (.. (.. sun origin) y) 7) (= water (updateObj water (--> w (moveDownNoCollision w)))))
  (on (== (.. (.. sun origin) y) 7) (= water (updateObj water (--> w (moveUpNoCollision w)))))

  (on (any nearSun ice)
    (let (= water (addObj water (map (--> i (Water (.. i origin))) (filter nearSun ice))))
         (= ice (filter (--> i (! (nearSun i))) ice))))

  (on (clicked water)
    (let (= ice (addObj ice (map (--> w (Ice (.. w origin))) (filter (--> w (clicked w)) water))))
         (= water (filter (--> w (! (clicked w))) water))))
)
