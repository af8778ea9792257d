; snake_trail: a snake (yellow head, green body) keeps moving one cell per step in its
; heading inside a walled box; the arrows turn it (a reversal is ignored). Eating the red
; apple grows the snake by one segment and the next apple appears at the next spot of a
; fixed cycle of five spots. Running into the wall or into its own body sends the snake
; back to its start (length three, heading right); the apple stays where it is.
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 3)

  (object Wall (Cell 0 0 "gray"))
  (object Apple (Cell 0 0 "red"))
  (object Body (Cell 0 0 "green"))
  (object Head (Cell 0 0 "yellow"))

  (= appleSpots (list (Position 6 2) (Position 2 7) (Position 7 7) (Position 3 2) (Position 7 4)))
  (= startHead (Position 4 5))
  (= startBody (list (Position 3 5) (Position 2 5)))

  (: walls (List Wall))
  (= walls (initnext (map (--> p (Wall p))
                          (filter (--> p (| (| (== (.. p x) 0) (== (.. p x) 9)) (| (== (.. p y) 0) (== (.. p y) 9))))
                                  (allPositions 10)))
                     (prev walls)))

  (: appleIndex Number)
  (= appleIndex (initnext 0 (prev appleIndex)))

  (: apple Apple)
  (= apple (initnext (Apple (Position 6 2)) (prev apple)))

  (: body (List Body))
  (= body (initnext (map (--> p (Body p)) startBody) (prev body)))

  (: head Head)
  (= head (initnext (Head startHead) (prev head)))

  (: heading Position)
  (= heading (initnext (Position 1 0) (prev heading)))

  (= inside (--> p (& (& (> (.. p x) 0) (< (.. p x) 9)) (& (> (.. p y) 0) (< (.. p y) 9)))))
  (= dropLast (--> l (map (--> i (at l i)) (range 0 (- (length l) 1)))))
  (= turn (--> d (if (& (== (.. d x) (- (.. heading x))) (== (.. d y) (- (.. heading y))))
                   then heading
                   else (= heading d))))

  (on left (turn (Position -1 0)))
  (on right (turn (Position 1 0)))
  (on up (turn (Position 0 -1)))
  (on down (turn (Position 0 1)))

  (on true
    (let (= ahead (Position (+ (.. (.. head origin) x) (.. heading x)) (+ (.. (.. head origin) y) (.. heading y))))
         (= eats (== ahead (.. apple origin)))
         (= kept (if eats then body else (dropLast body)))
         (if (| (! (inside ahead)) (any (--> s (== (.. s origin) ahead)) kept))
           then (let (= head (Head startHead))
                     (= body (map (--> p (Body p)) startBody))
                     (= heading (Position 1 0)))
           else (let (= body (concat (list (list (Body (.. head origin))) kept)))
                     (= head (Head ahead))
                     (if eats
                       then (let (= appleIndex (% (+ appleIndex 1) 5))
                                 (= apple (Apple (at appleSpots appleIndex))))
                       else apple)))))
)
