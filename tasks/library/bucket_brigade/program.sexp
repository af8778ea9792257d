; bucket_brigade: fires break out at random on houses; a fire starts small (orange),
; grows into a blaze (red) after a while, and a blaze sets the neighbouring houses alight.
; The arrows move a firefighter (white); walking onto the bucket picks it up (the
; firefighter turns tan), standing next to the lake fills it (cyan), and clicking a
; burning house next to the firefighter with a full bucket puts the fire out and empties
; the bucket.
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 4)

  (object House (: burning Bool) (: heat Number)
    (Cell 0 0 (if burning then (if (>= heat 15) then "red" else "orange") else "sienna")))
  (object Water (Cell 0 0 "blue"))
  (object Bucket (Cell 0 0 "tan"))
  (object Firefighter (: carrying Bool) (: water Number)
    (Cell 0 0 (if carrying then (if (> water 0) then "cyan" else "tan") else "white")))

  (: houses (List House))
  (= houses (initnext (map (--> p (House (== p (Position 5 8)) 0 p))
                           (list (Position 1 1) (Position 2 1) (Position 2 2) (Position 6 1) (Position 7 1)
                                 (Position 7 2) (Position 4 3) (Position 5 3) (Position 8 5) (Position 8 6)
                                 (Position 5 8) (Position 8 9) (Position 9 9)))
                      (prev houses)))

  (: lake (List Water))
  (= lake (initnext (map (--> p (Water p)) (list (Position 0 7) (Position 1 7) (Position 0 8) (Position 1 8)
                                                 (Position 0 9) (Position 1 9) (Position 2 9)))
                    (prev lake)))

  ; the bucket lying on the ground (an empty list once it has been picked up)
  (: bucket (List Bucket))
  (= bucket (initnext (list (Bucket (Position 3 6))) (prev bucket)))

  (: firefighter Firefighter)
  (= firefighter (initnext (Firefighter false 0 (Position 5 5)) (prev firefighter)))

  (= odds (range 0 30))
  (= near (--> (a b) (let (= ddx (- (.. a x) (.. b x))) (= ddy (- (.. a y) (.. b y)))
                          (== (+ (* ddx ddx) (* ddy ddy)) 1))))
  (= blazing (--> h (& (.. h burning) (>= (.. h heat) 15))))

  ; houses, the lake and the grid's edge stop the firefighter; the bucket does not
  (= walk (--> (dx dy)
    (let (= dest (Position (+ (.. (.. firefighter origin) x) dx) (+ (.. (.. firefighter origin) y) dy)))
         (if (| (| (< (.. dest x) 0) (>= (.. dest x) 10)) (| (< (.. dest y) 0) (>= (.. dest y) 10)))
           then firefighter
           else (if (| (isFreePos dest) (any (--> b (== (.. b origin) dest)) bucket))
                   then (= firefighter (move firefighter (Position dx dy)))
                   else firefighter)))))

  (on left (walk -1 0))
  (on right (walk 1 0))
  (on up (walk 0 -1))
  (on down (walk 0 1))

  (on (any (--> b (== (.. b origin) (.. firefighter origin))) bucket)
    (let (= bucket (list)) (= firefighter (updateObj firefighter "carrying" true))))

  (on (& (.. firefighter carrying) (any (--> w (near (.. w origin) (.. firefighter origin))) lake))
    (= firefighter (updateObj firefighter "water" 1)))

  ; fires grow; blazes light their neighbours
  (on (any (--> h (.. h burning)) houses)
    (let (= blazes (map (--> h (.. h origin)) (filter blazing houses)))
         (= houses (map (--> h (if (.. h burning)
                                  then (if (< (.. h heat) 15) then (updateObj h "heat" (+ (.. h heat) 1)) else h)
                                  else (if (any (--> q (near q (.. h origin))) blazes) then (updateObj h "burning" true) else h)))
                        houses))))

  ; now and then a fire breaks out on a house that is not burning
  (on (== (uniformChoice odds) 0)
    (let (= calm (filter (--> h (! (.. h burning))) houses))
         (if (> (length calm) 0)
           then (let (= spot (.. (uniformChoice calm) origin))
                     (= houses (map (--> h (if (== (.. h origin) spot) then (updateObj h "burning" true) else h)) houses)))
           else houses)))

  (on (& clicked (> (.. firefighter water) 0))
    (if (any (--> h (& (.. h burning) (& (== (.. h origin) click) (near click (.. firefighter origin))))) houses)
      then (let (= houses (map (--> h (if (== (.. h origin) click) then (House false 0 click) else h)) houses))
                (= firefighter (updateObj firefighter "water" (- (.. firefighter water) 1))))
      else houses))
)
