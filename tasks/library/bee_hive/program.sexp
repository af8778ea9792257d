; bee_hive: three worker bees fly from the hive (bottom left) to the nearest flower, one
; cell a step (diagonally when they can), take its pollen (the flower is used up and the
; bee turns orange), fly back and deliver it next to the hive, which adds a cell to the
; honey meter along the top row. Flowers bloom at random in the right third of the field.
; Clicking a flower removes it. The arrows move a smoke puff; a bee next to the smoke
; (diagonals included) gives up and flies home, keeping any pollen it carries.
(program
  (= GRID_SIZE 12)
  (= FRAME_RATE 4)

  (object Slot (Cell 0 0 "dimgray"))
  (object Comb (Cell 0 0 "goldenrod"))
  (object Hive (list (Cell 0 0 "saddlebrown") (Cell 1 0 "saddlebrown") (Cell 0 1 "saddlebrown") (Cell 1 1 "saddlebrown")))
  (object Flower (Cell 0 0 "magenta"))
  (object Bee (: pollen Bool) (: homing Bool) (Cell 0 0 (if pollen then "darkorange" else "yellow")))
  (object Smoke (Cell 0 0 "lightgray"))

  (: slots (List Slot))
  (= slots (initnext (map (--> x (Slot (Position x 0))) (range 0 12)) (prev slots)))

  (: combs (List Comb))
  (= combs (initnext (list) (prev combs)))

  (: hive Hive)
  (= hive (initnext (Hive (Position 0 10)) (prev hive)))

  (: flowers (List Flower))
  (= flowers (initnext (map (--> p (Flower p)) (list (Position 4 3) (Position 3 6) (Position 5 8) (Position 9 5)))
                       (prev flowers)))

  (: bees (List Bee))
  (= bees (initnext (map (--> y (Bee false false (Position 2 y))) (list 9 10 11)) (prev bees)))

  (: smoke Smoke)
  (= smoke (initnext (Smoke (Position 10 1)) (prev smoke)))

  (= chances (range 0 5))
  (= anchor (Position 1 10))
  (= inField (--> p (& (& (>= (.. p x) 0) (< (.. p x) 12)) (& (>= (.. p y) 1) (< (.. p y) 12)))))
  (= atHome (--> p (& (<= (.. p x) 2) (>= (.. p y) 9))))
  (= plus (--> (p dx dy) (Position (+ (.. p x) dx) (+ (.. p y) dy))))
  ; one cell toward the target: diagonally if that cell is open, else along x, else along y
  (= fits (--> (c from target busy enter)
    (& (& (!= c from) (inField c)) (& (| (isFreePos c) (& enter (== c target))) (! (in c busy))))))
  (= fly (--> (from target busy enter)
    (let (= way (unitVectorSinglePos (deltaPos from target)))
         (= slant (movePos from way))
         (if (fits slant from target busy enter) then slant
           else (let (= across (plus from (.. way x) 0))
                     (if (fits across from target busy enter) then across
                       else (let (= along (plus from 0 (.. way y)))
                                 (if (fits along from target busy enter) then along else from))))))))
  (= beeStep (--> (bee busy)
    (let (= here (.. bee origin))
         (= smoked (adjacentPossDiag here (.. smoke origin)))
         (= retreat (| (.. bee homing) smoked))
         (= load (.. bee pollen))
         (if (| load retreat)
           then (let (= there (if (atHome here) then here else (fly here anchor busy false)))
                     (if (atHome there)
                       then (let (if (& load (< (length combs) 12)) then (= combs (addObj combs (Comb (Position (length combs) 0)))) else combs)
                                 (Bee false false there))
                       else (Bee load retreat there)))
           else (if (== (length flowers) 0)
                  then (Bee false false (if (atHome here) then here else (fly here anchor busy false)))
                  else (let (= aim (.. (closest bee flowers) origin))
                            (= there (fly here aim busy true))
                            (if (== there aim)
                              then (let (= flowers (removeObj flowers (--> f (== (.. f origin) aim)))) (Bee true false there))
                              else (Bee false false there))))))))

  (on (clicked flowers) (= flowers (removeObj flowers (--> f (clicked f)))))

  (on left (let (= to (plus (.. smoke origin) -1 0)) (if (& (inField to) (isFreePos to)) then (= smoke (Smoke to)) else smoke)))
  (on right (let (= to (plus (.. smoke origin) 1 0)) (if (& (inField to) (isFreePos to)) then (= smoke (Smoke to)) else smoke)))
  (on up (let (= to (plus (.. smoke origin) 0 -1)) (if (& (inField to) (isFreePos to)) then (= smoke (Smoke to)) else smoke)))
  (on down (let (= to (plus (.. smoke origin) 0 1)) (if (& (inField to) (isFreePos to)) then (= smoke (Smoke to)) else smoke)))

  (on true
    (let (= bloomRoll (uniformChoice chances))
         (= bloomAt (head (randomPositions 12 1)))
         (= bees (foldl (--> (done bee) (addObj done (beeStep bee (addObj (map (--> d (.. d origin)) done) (list (.. smoke origin))))))
                        (list) bees))
         (if (& (& (== bloomRoll 0) (>= (.. bloomAt x) 8))
                (& (& (>= (.. bloomAt y) 1) (isFreePos bloomAt))
                   (& (< (length flowers) 8)
                      (& (!= bloomAt (.. smoke origin)) (! (in bloomAt (map (--> b (.. b origin)) bees)))))))
           then (= flowers (addObj flowers (Flower bloomAt))) else flowers)))
)
