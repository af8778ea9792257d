; key_and_door: the arrows walk an explorer; stepping onto the key picks it up (it then
; shows in the top-left corner); walking into the locked door with the key opens it;
; reaching the chest behind the door opens the chest (it turns green).
(program
  (= GRID_SIZE 9)
  (= FRAME_RATE 6)

  (object Wall (Cell 0 0 "gray"))
  (object Door (Cell 0 0 "sienna"))
  (object Key (Cell 0 0 "gold"))
  (object Chest (: opened Bool) (Cell 0 0 (if opened then "lime" else "purple")))
  (object Explorer (Cell 0 0 "cyan"))

  (: walls (List Wall))
  (= walls (initnext (map (--> y (Wall (Position 5 y))) (list 0 1 2 3 5 6 7 8)) (prev walls)))

  (: doors (List Door))
  (= doors (initnext (list (Door (Position 5 4))) (prev doors)))

  (: keys (List Key))
  (= keys (initnext (list (Key (Position 2 7))) (prev keys)))

  (: carrying Bool)
  (= carrying (initnext false (prev carrying)))

  (: badge (List Key))
  (= badge (initnext (list) (prev badge)))

  (: chest Chest)
  (= chest (initnext (Chest false (Position 7 1)) (prev chest)))

  (: explorer Explorer)
  (= explorer (initnext (Explorer (Position 1 1)) (prev explorer)))

  (= shift (--> (p dx dy) (Position (+ (.. p x) dx) (+ (.. p y) dy))))
  (= standsAt (--> (p objs) (any (--> o (== (.. o origin) p)) objs)))
  (= inside (--> p (& (& (>= (.. p x) 0) (< (.. p x) GRID_SIZE)) (& (>= (.. p y) 0) (< (.. p y) GRID_SIZE)))))

  (= walk (--> (dx dy)
    (let (= ahead (shift (.. explorer origin) dx dy))
         (if (| (! (inside ahead)) (| (standsAt ahead walls) (== ahead (.. chest origin)))) then
             (if (== ahead (.. chest origin)) then (= chest (updateObj chest "opened" true)) else explorer)
           else (if (standsAt ahead doors)
                   then (if carrying then (= doors (list)) else explorer)
                   else (if (standsAt ahead keys)
                           then (let (= keys (list)) (= carrying true) (= badge (list (Key (Position 0 0))))
                                     (= explorer (move explorer (Position dx dy))))
                           else (= explorer (move explorer (Position dx dy)))))))))

  (on left (walk -1 0))
  (on right (walk 1 0))
  (on up (walk 0 -1))
  (on down (walk 0 1))
)
