; fish_school: a gold leader fish wanders at random and four orange fish follow it in a
; chain, each swimming one cell toward the fish ahead of it (where that fish was at the
; start of the step) unless it is already next to it. Clicking an empty cell drops food:
; while there is food the leader swims to the nearest piece, one cell a step, and eats
; it. The arrows move a grey shark; a fish next to the shark darts one cell away from it
; (sideways if straight away is blocked) instead of swimming on.
(program
  (= GRID_SIZE 12)
  (= FRAME_RATE 4)

  (object Food (Cell 0 0 "lime"))
  (object Follower (Cell 0 0 "orange"))
  (object Leader (Cell 0 0 "gold"))
  (object Shark (Cell 0 0 "slategray"))

  (: food (List Food))
  (= food (initnext (list) (prev food)))

  (: school (List Follower))
  (= school (initnext (map (--> x (Follower (Position x 5))) (list 5 4 3 2)) (prev school)))

  (: leader Leader)
  (= leader (initnext (Leader (Position 6 5)) (prev leader)))

  (: shark Shark)
  (= shark (initnext (Shark (Position 10 10)) (prev shark)))

  (= wanders (list (Position 1 0) (Position -1 0) (Position 0 1) (Position 0 -1) (Position 0 0)))
  (= inGrid (--> p (& (& (>= (.. p x) 0) (< (.. p x) 12)) (& (>= (.. p y) 0) (< (.. p y) 12)))))
  (= open (--> (p taken) (& (inGrid p) (& (isFreePos p) (! (in p taken))))))
  (= plus (--> (p d) (Position (+ (.. p x) (.. d x)) (+ (.. p y) (.. d y)))))
  ; one cell toward target, along x first, else along y; stay when both are blocked
  (= toward (--> (from target taken)
    (let (= dx (sign (- (.. target x) (.. from x))))
         (= dy (sign (- (.. target y) (.. from y))))
         (= first (if (!= dx 0) then (Position (+ (.. from x) dx) (.. from y)) else (Position (.. from x) (+ (.. from y) dy))))
         (if (| (== first target) (open first taken)) then first
           else (if (| (== dx 0) (== dy 0)) then from
             else (let (= second (Position (.. from x) (+ (.. from y) dy)))
                       (if (| (== second target) (open second taken)) then second else from)))))))
  ; a fish next to the shark darts one cell straight away from it; if that cell is
  ; blocked it darts sideways (first turning clockwise, then anticlockwise); else it stays
  (= scared (--> p (adjacentPoss p (.. shark origin) 1)))
  (= dart (--> (p taken)
    (let (= d (deltaPos (.. shark origin) p))
         (= away (plus p d))
         (= side (plus p (Position (- 0 (.. d y)) (.. d x))))
         (= other (plus p (Position (.. d y) (- 0 (.. d x)))))
         (if (open away taken) then away
           else (if (open side taken) then side else (if (open other taken) then other else p))))))

  (on left (let (= next (plus (.. shark origin) (Position -1 0))) (if (open next (list)) then (= shark (Shark next)) else shark)))
  (on right (let (= next (plus (.. shark origin) (Position 1 0))) (if (open next (list)) then (= shark (Shark next)) else shark)))
  (on up (let (= next (plus (.. shark origin) (Position 0 -1))) (if (open next (list)) then (= shark (Shark next)) else shark)))
  (on down (let (= next (plus (.. shark origin) (Position 0 1))) (if (open next (list)) then (= shark (Shark next)) else shark)))

  (on (& clicked (open click (list (.. shark origin)))) (= food (addObj food (Food click))))

  (on true
    (let (= drift (uniformChoice wanders))
         (= start (.. leader origin))
         ; cells that fish may not enter besides those occupied in the last frame: the
         ; shark's cell and a piece of food dropped in this very step
         (= taken (if (> (length food) (length (prev food))) then (list (.. shark origin) (.. (tail food) origin)) else (list (.. shark origin))))
         (= goal (if (> (length food) 0) then (.. (closest leader food) origin) else start))
         (= moved (if (scared start) then (dart start taken)
                    else (if (> (length food) 0) then (toward start goal taken)
                      else (let (= p (plus start drift)) (if (open p taken) then p else start)))))
         (= aheads (addObj (list start) (map (--> f (.. f origin)) school)))
         (= placed (foldl (--> (acc i)
                             (let (= from (.. (at school i) origin))
                                  (= ahead (at aheads i))
                                  (= busy (addObj taken acc))
                                  (= to (if (scared from) then (dart from busy)
                                          else (if (adjacentPoss from ahead 1) then from else (toward from ahead busy))))
                                  (addObj acc (list to))))
                           (list moved)
                           (range 0 (length school))))
         (= leader (Leader moved))
         (= school (map (--> i (Follower (at placed (+ i 1)))) (range 0 (length school))))
         (if (& (> (length food) 0) (== moved goal)) then (= food (removeObj food (closest leader food))) else food)))
)
