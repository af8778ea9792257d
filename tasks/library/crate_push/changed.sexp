; crate_push, changed: crates refuse to be pushed north.
(program
  (= GRID_SIZE 9)
  (= FRAME_RATE 6)

  (object Pad (Cell 0 0 "green"))
  (object Wall (Cell 0 0 "gray"))
  (object Crate (Cell 0 0 "orange"))
  (object Worker (Cell 0 0 "blue"))

  (: pad Pad)
  (= pad (initnext (Pad (Position 6 2)) (prev pad)))

  (: walls (List Wall))
  (= walls (initnext (map (--> p (Wall p)) (list (Position 4 0) (Position 4 1) (Position 4 2) (Position 1 6) (Position 2 6) (Position 3 6) (Position 6 6) (Position 7 6)))
                     (prev walls)))

  (: crates (List Crate))
  (= crates (initnext (list (Crate (Position 2 3)) (Crate (Position 6 4))) (prev crates)))

  (: worker Worker)
  (= worker (initnext (Worker (Position 1 1)) (prev worker)))

  (= shift (--> (p dx dy) (Position (+ (.. p x) dx) (+ (.. p y) dy))))
  (= inside (--> p (& (& (>= (.. p x) 0) (< (.. p x) GRID_SIZE)) (& (>= (.. p y) 0) (< (.. p y) GRID_SIZE)))))
  (= standsAt (--> (p objs) (any (--> o (== (.. o origin) p)) objs)))
  (= solid (--> p (| (! (inside p)) (| (standsAt p walls) (standsAt p crates)))))

  (= walk (--> (dx dy)
    (let (= ahead (shift (.. worker origin) dx dy))
         (= beyond (shift ahead dx dy))
         (if (| (! (inside ahead)) (standsAt ahead walls)) then worker
           else (if (standsAt ahead crates)
                   then (if (| (solid beyond) (== dy -1)) then worker
                          else (let (= crates (updateObj crates (--> c (if (== (.. c origin) ahead) then (move c (Position dx dy)) else c))))
                                    (= worker (move worker (Position dx dy)))))
                   else (= worker (move worker (Position dx dy))))))))

  (on left (walk -1 0))
  (on right (walk 1 0))
  (on up (walk 0 -1))
  (on down (walk 0 1))
)
