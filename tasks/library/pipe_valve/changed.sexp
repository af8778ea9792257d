; pipe_valve, changed: the middle valve is wired the other way round: it lets water
; through while it shows closed (red) and blocks it while it shows open (green).
(program
  (= GRID_SIZE 12)
  (= FRAME_RATE 5)

  (object Source (Cell 0 0 "navy"))
  (object Valve (: open Bool) (Cell 0 0 (if open then "lime" else "red")))
  ; up: the index of the pipe that feeds this one (-1: the source); gate: the index of the
  ; valve between them (-1: none)
  (object Pipe (: wet Bool) (: up Number) (: gate Number) (Cell 0 0 (if wet then "blue" else "gray")))
  ; feed: the index of the pipe that pours into the basin
  (object Basin (: level Number) (: feed Number)
    (list (Cell 0 0 (if (>= level 3) then "blue" else "white")) (Cell 1 0 (if (>= level 3) then "blue" else "white")) (Cell 2 0 (if (>= level 3) then "blue" else "white"))
          (Cell 0 1 (if (>= level 2) then "blue" else "white")) (Cell 1 1 (if (>= level 2) then "blue" else "white")) (Cell 2 1 (if (>= level 2) then "blue" else "white"))
          (Cell 0 2 (if (>= level 1) then "blue" else "white")) (Cell 1 2 (if (>= level 1) then "blue" else "white")) (Cell 2 2 (if (>= level 1) then "blue" else "white"))))

  (: source Source)
  (= source (initnext (Source (Position 5 0)) (prev source)))

  ; 0: main valve under the source; 1: left branch; 2: middle branch; 3: right branch
  (: valves (List Valve))
  (= valves (initnext (list (Valve false (Position 5 1)) (Valve false (Position 4 3))
                            (Valve false (Position 5 4)) (Valve true (Position 6 3)))
                      (prev valves)))

  (: pipes (List Pipe))
  (= pipes (initnext (list
      (Pipe false -1 0 (Position 5 2)) (Pipe false 0 -1 (Position 5 3))
      (Pipe false 1 1 (Position 3 3)) (Pipe false 2 -1 (Position 2 3)) (Pipe false 3 -1 (Position 1 3))
      (Pipe false 4 -1 (Position 1 4)) (Pipe false 5 -1 (Position 1 5)) (Pipe false 6 -1 (Position 1 6))
      (Pipe false 7 -1 (Position 1 7)) (Pipe false 8 -1 (Position 1 8))
      (Pipe false 1 2 (Position 5 5)) (Pipe false 10 -1 (Position 5 6)) (Pipe false 11 -1 (Position 5 7))
      (Pipe false 12 -1 (Position 5 8))
      (Pipe false 1 3 (Position 7 3)) (Pipe false 14 -1 (Position 8 3)) (Pipe false 15 -1 (Position 9 3))
      (Pipe false 16 -1 (Position 10 3)) (Pipe false 17 -1 (Position 10 4)) (Pipe false 18 -1 (Position 10 5))
      (Pipe false 19 -1 (Position 10 6)) (Pipe false 20 -1 (Position 10 7)) (Pipe false 21 -1 (Position 10 8)))
    (prev pipes)))

  (: basins (List Basin))
  (= basins (initnext (list (Basin 0 9 (Position 0 9)) (Basin 0 13 (Position 4 9)) (Basin 0 22 (Position 9 9)))
                      (prev basins)))

  (= passes (--> g (| (< g 0) (if (== g 2) then (! (.. (at valves g) open)) else (.. (at valves g) open)))))
  (= fed (--> u (| (< u 0) (.. (at pipes u) wet))))

  (on (clicked valves)
    (let (= valves (map (--> v (if (clicked v) then (updateObj v "open" (! (.. v open))) else v)) valves))
         (= flowing true)))

  ; false once a step has changed no pipe and no basin: then nothing changes until a valve
  ; is clicked or the pipes are drained (a shortcut that changes nothing visible)
  (: flowing Bool)
  (= flowing (initnext true (prev flowing)))

  ; every pipe takes the water its feeder held a step ago, if the valve between lets it
  (on flowing
    (let (= filled (map (--> b (if (& (< (.. b level) 3) (.. (at pipes (.. b feed)) wet)) then (updateObj b "level" (+ (.. b level) 1)) else b)) basins))
         (= flowed (map (--> p (let (= flows (& (passes (.. p gate)) (fed (.. p up))))
                                    (if (== flows (.. p wet)) then p else (updateObj p "wet" flows))))
                        pipes))
         (= flowing (| (!= flowed pipes) (!= filled basins)))
         (= basins filled)
         (= pipes flowed)))

  (on down
    (let (= pipes (map (--> p (updateObj p "wet" false)) pipes))
         (= basins (map (--> b (updateObj b "level" 0)) basins))
         (= flowing true)))
)
