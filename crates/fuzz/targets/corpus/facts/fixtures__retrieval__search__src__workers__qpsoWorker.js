// Quantum-behaved particle swarm optimisation, run off the main thread.

/** Moves every particle towards the attractor between its best and the swarm's best. */
function stepSwarm(particles, globalBest, beta) {
  for (const p of particles) {
    for (let d = 0; d < p.position.length; d++) {
      const phi = Math.random();
      const attractor = phi * p.best[d] + (1 - phi) * globalBest[d];
      const u = Math.random();
      const sign = Math.random() < 0.5 ? -1 : 1;
      p.position[d] = attractor + sign * beta * Math.abs(p.position[d] - attractor) * Math.log(1 / u);
    }
  }
}

self.onmessage = (event) => {
  const { particles, globalBest, iterations } = event.data;
  for (let i = 0; i < iterations; i++) stepSwarm(particles, globalBest, 0.75);
  self.postMessage({ particles });
};
