; forest_fire, changed: firebreaks no longer stop fire: a firebreak next to a burning
; tree catches fire like a tree (and burns to ash).
(program
  (= GRID_SIZE 12)
  (= FRAME_RATE 3)
  (= background "forestgreen")

  (object Ground (Cell 0 0 "saddlebrown"))
  (object Ash (Cell 0 0 "gray"))
  (object Break (Cell 0 0 "tan"))
  (object Fire (Cell 0 0 "orangered"))

  (: ground (List Ground))
  (= ground (initnext (list
                            (Ground (Position 4 0)) (Ground (Position 9 0)) (Ground (Position 4 1)) (Ground (Position 9 1))
                            (Ground (Position 9 2)) (Ground (Position 4 3)) (Ground (Position 9 3)) (Ground (Position 0 4))
                            (Ground (Position 1 4)) (Ground (Position 2 4)) (Ground (Position 3 4)) (Ground (Position 4 4))
                            (Ground (Position 9 4)) (Ground (Position 10 4)) (Ground (Position 11 4)) (Ground (Position 3 5))
                            (Ground (Position 4 5)) (Ground (Position 5 5)) (Ground (Position 6 5)) (Ground (Position 7 5))
                            (Ground (Position 8 5)) (Ground (Position 9 5)) (Ground (Position 3 6)) (Ground (Position 8 6))
                            (Ground (Position 3 7)) (Ground (Position 8 7)) (Ground (Position 3 8)) (Ground (Position 8 8))
                            (Ground (Position 9 8)) (Ground (Position 10 8)) (Ground (Position 11 8)) (Ground (Position 0 9))
                            (Ground (Position 1 9)) (Ground (Position 2 9)) (Ground (Position 3 9)) (Ground (Position 8 9))
                            (Ground (Position 2 10)) (Ground (Position 8 10)) (Ground (Position 2 11)) (Ground (Position 8 11)))
                      (prev ground)))

  (: ashNew (List Ash))
  (= ashNew (initnext (list) (prev ashNew)))
  (: ashMid (List Ash))
  (= ashMid (initnext (list) (prev ashMid)))
  (: ashOld (List Ash))
  (= ashOld (initnext (list) (prev ashOld)))

  (: breaks (List Break))
  (= breaks (initnext (list) (prev breaks)))

  (: fires (List Fire))
  (= fires (initnext (list (Fire (Position 1 2))) (prev fires)))

  (= chances (range 0 120))
  (= inGrid (--> p (& (& (>= (.. p x) 0) (< (.. p x) 12)) (& (>= (.. p y) 0) (< (.. p y) 12)))))
  (= distinct (--> ps (foldl (--> (acc p) (if (in p acc) then acc else (concat (list acc (list p))))) (list) ps)))

  ; a click on a burning tree puts it out: it is forest again
  (on (clicked fires) (= fires (removeObj fires (--> f (clicked f)))))

  ; every step: fire spreads to neighbouring trees and burns out, ash ages, ground regrows,
  ; lightning may strike (the random draws happen every step, whatever the state)
  (on true
    (let (= pick (uniformChoice chances))
         (= roll (uniformChoice chances))
         (= bolt (head (randomPositions 12 1)))
         (= heat (concat (map (--> f (adjPositions (.. f origin))) fires)))
         (= lit (distinct (filter isFreePos heat)))
         (= struck (if (& (< roll 3) (& (isFreePos bolt) (! (in bolt lit)))) then (list bolt) else (list)))
         (= regrown (if (> (length ground) 0) then (list (at ground (% pick (length ground)))) else (list)))
         (= ground (addObj (removeObj ground regrown) (map (--> a (Ground (.. a origin))) ashOld)))
         (= ashOld ashMid)
         (= ashMid ashNew)
         (= ashNew (map (--> f (Ash (.. f origin))) fires))
         (= burningBreaks (filter (--> b (adj b fires 1)) breaks))
         (= breaks (removeObj breaks burningBreaks))
         (= fires (map (--> p (Fire p)) (concat (list lit struck (map (--> b (.. b origin)) burningBreaks)))))))

  ; a click on anything else: ground or a tree becomes a firebreak, a firebreak becomes ground
  (on (& clicked (! (clicked fires)))
    (if (clicked breaks) then (let (= breaks (removeObj breaks (--> b (clicked b)))) (= ground (addObj ground (Ground click))))
      else (if (clicked ground) then (let (= ground (removeObj ground (--> g (clicked g)))) (= breaks (addObj breaks (Break click))))
        else (if (& (inGrid click) (isFreePos click)) then (= breaks (addObj breaks (Break click))) else breaks))))
)
