; ghost_maze: the arrows move a yellow player through a grey-walled maze; it eats the white
; pellets on the cells it enters. A red ghost moves one cell at random every step (never
; into a wall). If the player and the ghost meet, the player goes back to its start. Eating
; one of the orange power pellets turns the ghost blue for 8 steps (the blue bar above the
; maze shows the steps left); meeting a blue ghost sends the ghost back to its home instead.
; When the last white pellet is eaten, every pellet and power pellet comes back.
(program
  (= GRID_SIZE 11)
  (= FRAME_RATE 3)

  (object Wall (Cell 0 0 "slategray"))
  (object Pellet (Cell 0 0 "white"))
  (object Power (Cell 0 0 "orange"))
  (object Tick (Cell 0 0 "dodgerblue"))
  (object Player (Cell 0 0 "yellow"))
  (object Ghost (: blue Bool) (Cell 0 0 (if blue then "dodgerblue" else "red")))

  (= wallSpots (list (Position 0 1) (Position 1 1) (Position 2 1) (Position 3 1) (Position 4 1) (Position 5 1) (Position 6 1) (Position 7 1)
                     (Position 8 1) (Position 9 1) (Position 10 1) (Position 0 2) (Position 10 2) (Position 0 3) (Position 2 3) (Position 3 3)
                     (Position 5 3) (Position 7 3) (Position 8 3) (Position 10 3) (Position 0 4) (Position 10 4) (Position 0 5) (Position 2 5)
                     (Position 4 5) (Position 5 5) (Position 6 5) (Position 8 5) (Position 10 5) (Position 0 6) (Position 2 6) (Position 8 6)
                     (Position 10 6) (Position 0 7) (Position 4 7) (Position 6 7) (Position 10 7) (Position 0 8) (Position 2 8) (Position 4 8)
                     (Position 6 8) (Position 8 8) (Position 10 8) (Position 0 9) (Position 10 9) (Position 0 10) (Position 1 10) (Position 2 10)
                     (Position 3 10) (Position 4 10) (Position 5 10) (Position 6 10) (Position 7 10) (Position 8 10) (Position 9 10) (Position 10 10)))
  (= pelletSpots (list (Position 2 2) (Position 3 2) (Position 4 2) (Position 6 2) (Position 7 2) (Position 8 2) (Position 1 3) (Position 4 3)
                       (Position 6 3) (Position 9 3) (Position 1 4) (Position 2 4) (Position 3 4) (Position 4 4) (Position 5 4) (Position 6 4)
                       (Position 7 4) (Position 8 4) (Position 9 4) (Position 1 5) (Position 3 5) (Position 7 5) (Position 9 5) (Position 1 6)
                       (Position 3 6) (Position 4 6) (Position 5 6) (Position 6 6) (Position 7 6) (Position 9 6) (Position 1 7) (Position 2 7)
                       (Position 3 7) (Position 5 7) (Position 7 7) (Position 8 7) (Position 9 7) (Position 1 8) (Position 3 8) (Position 5 8)
                       (Position 7 8) (Position 9 8) (Position 2 9) (Position 3 9) (Position 4 9) (Position 5 9) (Position 6 9) (Position 7 9)
                       (Position 8 9)))
  (= powerSpots (list (Position 1 2) (Position 9 2) (Position 9 9)))
  (= playerHome (Position 1 9))
  (= ghostHome (Position 5 2))
  (= frightSteps 8)

  (: walls (List Wall))
  (= walls (initnext (map (--> p (Wall p)) wallSpots) (prev walls)))

  (: pellets (List Pellet))
  (= pellets (initnext (map (--> p (Pellet p)) pelletSpots) (prev pellets)))

  (: powers (List Power))
  (= powers (initnext (map (--> p (Power p)) powerSpots) (prev powers)))

  (: fright Number)
  (= fright (initnext 0 (prev fright)))

  (: bar (List Tick))
  (= bar (initnext (list) (prev bar)))

  (: ghost Ghost)
  (= ghost (initnext (Ghost false ghostHome) (prev ghost)))

  (: player Player)
  (= player (initnext (Player playerHome) (prev player)))

  (= open (--> p (! (in p wallSpots))))
  (= stepTo (--> (dx dy)
    (let (= ahead (Position (+ (.. (.. player origin) x) dx) (+ (.. (.. player origin) y) dy)))
         (if (open ahead) then (= player (Player ahead)) else player))))
  (= meet (--> ()
    (if (== (.. player origin) (.. ghost origin))
      then (if (> fright 0) then (= ghost (Ghost true ghostHome)) else (= player (Player playerHome)))
      else player)))

  (on (> fright 0) (= fright (- fright 1)))

  (on left (stepTo -1 0))
  (on right (stepTo 1 0))
  (on up (stepTo 0 -1))
  (on down (stepTo 0 1))

  (on true
    (let (= here (.. player origin))
         (= pellets (removeObj pellets (--> q (== (.. q origin) here))))
         (if (any (--> q (== (.. q origin) here)) powers)
           then (let (= powers (removeObj powers (--> q (== (.. q origin) here))))
                     (= fright frightSteps))
           else powers)
         (if (== (length pellets) 0)
           then (let (= pellets (map (--> p (Pellet p)) pelletSpots))
                     (= powers (map (--> p (Power p)) powerSpots)))
           else pellets)
         ((meet))
         (= ghost (Ghost (> fright 0) (uniformChoice (filter open (adjPositions (.. ghost origin))))))
         ((meet))
         (= ghost (updateObj ghost "blue" (> fright 0)))
         (= bar (map (--> k (Tick (Position (+ k 1) 0))) (range 0 fright)))))
)
