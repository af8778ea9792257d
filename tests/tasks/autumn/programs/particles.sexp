; Particles wander at random; a click adds one; "down" removes the clicked-first one.
(program
  (= GRID_SIZE 12)
  (object Particle (Cell 0 0 "orange"))
  (= particles (initnext (map (--> p (Particle p)) (randomPositions GRID_SIZE 3))
    (updateObj (prev particles)
      (--> p (let (= step (uniformChoice (list (Position 1 0) (Position -1 0) (Position 0 1) (Position 0 -1))))
                  (= moved (move p step))
                  (if (isWithinBounds moved) then moved else p))))))
  (on clicked (= particles (addObj particles (Particle click))))
  (on (& down (> (length particles) 0)) (= particles (removeObj particles (head particles))))
)
