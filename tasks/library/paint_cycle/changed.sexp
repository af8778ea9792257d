; paint_cycle, changed: from the fifth dab on, the brush paints blue whatever its colour.
(program
  (= GRID_SIZE 8)
  (= FRAME_RATE 5)

  (object Swatch (: colour String) (Cell 0 0 colour))
  (object Dab (: colour String) (Cell 0 0 colour))

  (: brush String)
  (= brush (initnext "red" (prev brush)))

  (: dabs (List Dab))
  (= dabs (initnext (list) (prev dabs)))

  (: swatch Swatch)
  (= swatch (initnext (Swatch "red" (Position 0 0)) (updateObj (prev swatch) "colour" brush)))

  (on (& up (== (prev brush) "red")) (= brush "gold"))
  (on (& up (== (prev brush) "gold")) (= brush "green"))
  (on (& up (== (prev brush) "green")) (= brush "purple"))
  (on (& up (== (prev brush) "purple")) (= brush "red"))

  (on down (= dabs (list)))

  (on (& clicked (! (clicked swatch)))
    (= dabs (addObj (removeObj dabs (--> d (== (.. d origin) click))) (Dab (if (>= (length dabs) 4) then "blue" else brush) click))))
)
