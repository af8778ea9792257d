; spark_jar: sparks jitter at random inside a glass jar; clicking an empty cell inside
; the jar adds a spark; the down arrow cools the jar (sparks freeze and turn cyan), the
; up arrow heats it again.
(program
  (= GRID_SIZE 9)
  (= FRAME_RATE 5)

  (object Glass (Cell 0 0 "gray"))
  (object Spark (: hot Bool) (Cell 0 0 (if hot then "gold" else "cyan")))

  (: glass (List Glass))
  (= glass (initnext (map (--> p (Glass p))
                          (filter (--> p (& (>= (.. p y) 1) (| (| (== (.. p x) 1) (== (.. p x) 7)) (== (.. p y) 8))))
                                  (allPositions 9)))
                     (prev glass)))

  (: sparks (List Spark))
  (= sparks (initnext (list (Spark true (Position 3 5)) (Spark true (Position 5 3))) (prev sparks)))

  (: heated Bool)
  (= heated (initnext true (prev heated)))

  (= jitters (list (Position 1 0) (Position -1 0) (Position 0 1) (Position 0 -1)))
  (= inJar (--> p (& (& (> (.. p x) 1) (< (.. p x) 7)) (& (>= (.. p y) 1) (< (.. p y) 8)))))
  (= jitter (--> s (let (= j (uniformChoice jitters))
                        (= moved (move s j))
                        (if (& (inJar (.. moved origin)) (isFreePos (.. moved origin))) then moved else s))))

  (on down (let (= heated false) (= sparks (updateObj sparks (--> s (updateObj s "hot" false))))))
  (on up (let (= heated true) (= sparks (updateObj sparks (--> s (updateObj s "hot" true))))))

  (on heated (= sparks (updateObj sparks jitter)))

  (on (& clicked (& (inJar click) (isFreePos click))) (= sparks (addObj sparks (Spark heated click))))
)
