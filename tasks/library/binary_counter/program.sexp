; binary_counter: six lamps (yellow lit, grey dark) read as a binary number, lowest bit on
; the right; it starts at 5. Clicking the green button adds one (the carry runs left
; across lit lamps), clicking the red button clears all lamps, the down arrow subtracts
; one (borrowing leftwards; 0 wraps to 63 and 63 + 1 wraps to 0), the left arrow shifts
; every bit one lamp left (doubling) and the right arrow shifts every bit one lamp right
; (halving); the lamp shifted out is lost and a dark lamp comes in.
(program
  (= GRID_SIZE 8)
  (= FRAME_RATE 4)

  (object Lamp (: lit Bool) (: i Number) (Cell 0 0 (if lit then "yellow" else "dimgray")))
  (object Button (: colour String) (Cell 0 0 colour))

  (: lamps (List Lamp))
  (= lamps (initnext (map (--> k (Lamp (in k (list 0 2)) k (Position (- 6 k) 3))) (range 0 6))
                     (prev lamps)))

  (: plus Button)
  (= plus (initnext (Button "lime" (Position 6 5)) (prev plus)))

  (: clear Button)
  (= clear (initnext (Button "red" (Position 1 5)) (prev clear)))

  (= setLit (--> (l v) (updateObj l "lit" v)))
  (= litAt (--> (ls k) (if (& (>= k 0) (< k 6)) then (.. (at ls k) lit) else false)))

  (= increment (--> ls
    (let (= darks (filter (--> l (! (.. l lit))) ls))
         (= k (if (== (length darks) 0) then 6 else (.. (head darks) i)))
         (map (--> l (setLit l (if (< (.. l i) k) then false else (if (== (.. l i) k) then true else (.. l lit))))) ls))))

  (= decrement (--> ls
    (let (= lits (filter (--> l (.. l lit)) ls))
         (= k (if (== (length lits) 0) then 6 else (.. (head lits) i)))
         (map (--> l (setLit l (if (< (.. l i) k) then true else (if (== (.. l i) k) then false else (.. l lit))))) ls))))

  (on (clicked plus) (= lamps (increment lamps)))
  (on (clicked clear) (= lamps (map (--> l (setLit l false)) lamps)))
  (on down (= lamps (decrement lamps)))
  (on left (= lamps (map (--> l (setLit l (litAt lamps (- (.. l i) 1)))) lamps)))
  (on right (= lamps (map (--> l (setLit l (litAt lamps (+ (.. l i) 1)))) lamps)))
)
