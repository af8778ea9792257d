; brick_breaker, changed: a yellow brick takes two hits: the first cracks it (it turns
; khaki), the second breaks it.
(program
  (= GRID_SIZE 10)
  (= FRAME_RATE 5)

  (object Brick (: colour String) (list (Cell 0 0 colour) (Cell 1 0 colour)))
  (object Paddle (list (Cell -1 0 "dodgerblue") (Cell 0 0 "dodgerblue") (Cell 1 0 "dodgerblue")))
  (object Ball (: dx Number) (: dy Number) (: moving Bool) (Cell 0 0 "white"))

  (: bricks (List Brick))
  (= bricks (initnext (concat (list (map (--> i (Brick "red" (Position (* 2 i) 1))) (range 0 5))
                                    (map (--> i (Brick "orange" (Position (* 2 i) 2))) (range 0 5))
                                    (map (--> i (Brick "yellow" (Position (* 2 i) 3))) (range 0 5))))
                      (prev bricks)))

  (: paddle Paddle)
  (= paddle (initnext (Paddle (Position 4 9)) (prev paddle)))

  (: ball Ball)
  (= ball (initnext (Ball 1 -1 false (Position 4 8)) (prev ball)))

  ; does brick b cover the cell (cx, cy)?
  (= covers (--> (b cx cy) (& (== (.. (.. b origin) y) cy)
                              (| (== (.. (.. b origin) x) cx) (== (+ (.. (.. b origin) x) 1) cx)))))

  (on (& left (> (.. (.. paddle origin) x) 1)) (= paddle (moveLeft paddle)))
  (on (& right (< (.. (.. paddle origin) x) 8)) (= paddle (moveRight paddle)))

  ; a waiting ball rides on the middle of the paddle; the up arrow launches it up-right
  (on (! (.. ball moving)) (= ball (Ball 1 -1 false (Position (.. (.. paddle origin) x) 8))))
  (on (& up (! (.. ball moving))) (= ball (updateObj ball "moving" true)))

  (on (.. ball moving)
    (let (= bx (.. (.. ball origin) x))
         (= by (.. (.. ball origin) y))
         (= vx (if (| (< (+ bx (.. ball dx)) 0) (> (+ bx (.. ball dx)) 9)) then (- (.. ball dx)) else (.. ball dx)))
         (= vy (if (< (+ by (.. ball dy)) 0) then (- (.. ball dy)) else (.. ball dy)))
         (= tx (+ bx vx))
         (= ty (+ by vy))
         (= px (.. (.. paddle origin) x))
         (if (any (--> b (covers b tx ty)) bricks)
           then (let (= bricks (updateObj (removeObj bricks (--> b (& (covers b tx ty) (!= (.. b colour) "yellow"))))
                                          (--> b (updateObj b "colour" "khaki"))
                                          (--> b (& (covers b tx ty) (== (.. b colour) "yellow")))))
                     (= ball (Ball vx (- vy) true (Position bx by))))
           else (if (& (== ty 9) (<= (abs (- tx px)) 1))
                   then (= ball (Ball vx (- vy) true (Position bx by)))
                   else (if (> ty 9)
                           then (= ball (Ball 1 -1 false (Position px 8)))
                           else (= ball (Ball vx vy true (Position tx ty))))))))
)
