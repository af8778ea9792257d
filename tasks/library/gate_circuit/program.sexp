; gate_circuit: four switches on the left (lime on, dark green off; click to toggle) feed
; wires (yellow when carrying a signal, grey when not) into three logic gates: an AND
; gate (orange) fed by the top two switches, an OR gate (blue) fed by the bottom two, and
; an XOR gate (violet) fed by the outputs of those two gates. The XOR gate's output wire
; ends in the output lamp on the right (white lit, maroon dark).
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 4)

  (object Switch (: on Bool) (Cell 0 0 (if on then "lime" else "darkgreen")))
  (object Wire (: lit Bool) (: src Number) (Cell 0 0 (if lit then "yellow" else "dimgray")))
  (object Gate (: colour String) (Cell 0 0 colour))
  (object Lamp (: lit Bool) (Cell 0 0 (if lit then "white" else "maroon")))

  ; wire cells as (signal x y): signals 0-3 are the switches from the top, 4 the AND
  ; gate's output, 5 the OR gate's, 6 the XOR gate's.
  (= wireSpots (list (list 0 1 2) (list 0 2 2) (list 0 3 2) (list 0 4 2)
                     (list 1 1 4) (list 1 2 4) (list 1 3 4) (list 1 4 4)
                     (list 2 1 6) (list 2 2 6) (list 2 3 6) (list 2 4 6)
                     (list 3 1 8) (list 3 2 8) (list 3 3 8) (list 3 4 8)
                     (list 4 5 3) (list 4 6 3) (list 4 7 3) (list 4 7 4)
                     (list 5 5 7) (list 5 6 7) (list 5 7 7) (list 5 7 6)
                     (list 6 8 5)))

  (= startOn (list true false false false))
  (= switchSpots (list (Position 0 2) (Position 0 4) (Position 0 6) (Position 0 8)))

  ; the seven signals from the four switch settings
  (= signals (--> ons
    (let (= inA (at ons 0)) (= inB (at ons 1)) (= inC (at ons 2)) (= inD (at ons 3))
         (= outAnd (& inA inB))
         (= outOr (| inC inD))
         (= outXor (!= outAnd outOr))
         (list inA inB inC inD outAnd outOr outXor))))

  (= settings (--> sws (map (--> s (.. s on)) sws)))
  (= relight (--> (ws ons) (let (= sig (signals ons)) (map (--> w (updateObj w "lit" (at sig (.. w src)))) ws))))

  (: switches (List Switch))
  (= switches (initnext (map (--> k (Switch (at startOn k) (at switchSpots k))) (range 0 4))
                        (prev switches)))

  (: gates (List Gate))
  (= gates (initnext (list (Gate "orange" (Position 4 3)) (Gate "dodgerblue" (Position 4 7))
                           (Gate "violet" (Position 7 5)))
                     (prev gates)))

  (: wires (List Wire))
  (= wires (initnext (relight (map (--> t (Wire false (at t 0) (Position (at t 1) (at t 2)))) wireSpots) startOn)
                     (prev wires)))

  (: lamp Lamp)
  (= lamp (initnext (Lamp (at (signals startOn) 6) (Position 9 5)) (prev lamp)))

  (on (clicked switches)
    (let (= switches (updateObj switches (--> s (updateObj s "on" (! (.. s on)))) (--> s (clicked s))))
         (= wires (relight wires (settings switches)))
         (= lamp (updateObj lamp "lit" (at (signals (settings switches)) 6)))))
)
