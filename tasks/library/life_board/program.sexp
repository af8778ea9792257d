; life_board: live cells on a 10x8 board follow a birth/survival rule every step while
; the world runs: a live cell with 2 or 3 live neighbours (of its 8) survives, an empty
; cell with exactly 3 live neighbours comes alive. Clicking a board cell toggles it; the
; up arrow pauses or resumes the evolution (the bar on the top row is green while it
; runs and red while it is paused).
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 4)

  (object Live (Cell 0 0 "gold"))
  (object Bar (: running Bool)
    (map (--> i (Cell i 0 (if running then "green" else "firebrick"))) (range 0 10)))

  (: cells (List Live))
  (= cells (initnext (list (Live (Position 2 2)) (Live (Position 3 3)) (Live (Position 1 4))
                           (Live (Position 2 4)) (Live (Position 3 4)))
                     (prev cells)))

  (: bar Bar)
  (= bar (initnext (Bar true (Position 0 0)) (prev bar)))

  (= onBoard (--> p (& (& (>= (.. p x) 0) (< (.. p x) 10)) (& (>= (.. p y) 2) (< (.. p y) 10)))))
  (= upLeft (Position -1 -1))
  (= downRight (Position 2 2))
  (= left1 (Position -1 0))
  (= upRight (Position 1 -1))
  (= block (--> p (rect (movePos p upLeft) (movePos p downRight))))
  (= taken (--> p (removeObj (block p) isFreePos)))
  (= survives (--> c (let (= k (length (taken (.. c origin)))) (| (== k 3) (== k 4)))))
  (= owned (--> o (filter isFreePos (concat (list (rect (movePos o left1) (movePos o downRight)) (list (movePos o upRight)))))))
  (= bornNear (--> c (let (= o (.. c origin))
                          (filter (--> p (let (= near (taken p)) (& (& (== (length near) 3) (== (head near) o)) (onBoard p))))
                                  (owned o)))))

  (on up (= bar (updateObj bar "running" (! (.. bar running)))))

  (on (.. bar running)
    (let (= kept (filter survives cells))
         (= born (map (--> p (Live p)) (concat (map bornNear cells))))
         (= cells (addObj kept born))))

  (on (& clicked (onBoard click))
    (if (clicked cells) then (= cells (removeObj cells (--> c (clicked c))))
      else (= cells (addObj cells (Live click)))))
)
