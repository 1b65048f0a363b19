// Package scenario reads, validates and expands dpsim scenario files: YAML documents that
// describe one simulated system (a cloud-controlled plant or a consensus network), its
// privacy requirement and noise design, and how many Monte Carlo runs to make.
//
//	s, err := scenario.Load("scenarios/cloud-vehicle.yaml")
//	for _, point := range s.Expand() { ... }   // one scenario per sweep point
//
// Load and Parse are strict. Unknown fields, values of the wrong type, values out of range
// and dimensions that do not agree are errors; every problem in the file is reported at
// once (a *ValidationError), one line each, naming the file, the field path, the value,
// what is allowed and the line:
//
//	scenario bad.yaml: privacy.epsilon: -1 must be > 0 (line 12)
//	scenario bad.yaml: plant.B: 3 rows, plant.A is 2x2 (line 5)
//	scenario bad.yaml: plant.Aa: unknown field (allowed: A, B, C, x0) (line 6)
//
// Indices in field paths count from 0 (plant.A[1][0] is row 1, column 0). Parse solves no
// dynamics: plan.New builds each point once with pkg/dynamics (the graph and its rate, the
// LQR gains, the controller) and refuses what only the dynamics can refuse - a graph whose
// consensus rate alpha >= 1, an LQR problem without a stabilising solution - with the same
// *ValidationError, field path and line (Scenario.Problem, Refuse), and lists what is allowed
// but suspicious (an unstable closed loop, graph nodes whose weights sum to 1 or more, as in
// the paper's own graph) in Plan.Warnings; every command plans before it runs.
//
// # The schema
//
// Top level (name, kind, steps, episodes and privacy are required):
//
//	name:        cloud-vehicle  # letters, digits, '.', '_', '-'; default: the file name without .yaml
//	description: free text      # shown in reports
//	kind:        cloud-control  # cloud-control (Section 5) | consensus (Section 6)
//	steps:       100            # T, the horizon of one run: 1 .. 10^7
//	episodes:    500            # Monte Carlo episodes: 1 .. 10^9 (old name: runs)
//	seed:        53             # uint64 run seed; 0 or absent: drawn from crypto/rand
//	                            # when the run starts (cli.ResolveSeed) and recorded
//	plant:       {...}          # cloud-control only (required there)
//	controller:  {...}          # cloud-control only (required there)
//	graph:       {...}          # consensus only (required there)
//	x0:          [...]          # consensus only (required there): one initial value per node
//	privacy:     {...}
//	sweep:       {...}          # optional
//	transport:   {...}          # optional
//	faults:      {...}          # optional: missing-input rules and per-link faults
//	audit:       {...}          # optional: defaults of dpsim audit
//
// episodes was named runs (a run is also one invocation of dpsim). A file that still says runs
// is read as if it said episodes - the same scenario, the same results - with a warning in
// Scenario.Warnings that names the line and the new key; a file giving both is refused.
//
// Numbers are YAML numbers (1, 0.5, 1e-2); a quoted "1" is a string and is refused, and so
// are .nan and .inf. Integers may be written 1e3. Anchors and aliases (&a, *a) work.
//
// # Matrices and vectors
//
// A matrix is a list of rows, [[1, 0.1], [0, 1]], all rows of the same length. Where it
// is unambiguous, shorter forms are accepted:
//
//   - a single number is a 1x1 matrix (A: 1);
//   - a flat list is read by the matrix's role: B and L (one input, one output) are a
//     column, C, K and privacy.model.C are a row; for the square A and privacy.model.A a
//     flat list is refused (write the rows), except a list of one number;
//   - the LQR weights Q and R accept a number q (meaning q I), a flat list (the diagonal)
//     or the full matrix, which must be symmetric (Q positive semidefinite, R definite).
//
// A vector (x0, xhat0, a constant reference) is a flat list of numbers; a single number is
// a vector of length 1.
//
// # plant (cloud-control)
//
// The plant x(t+1) = A x + B u, y = C x (eq. 23):
//
//	plant:
//	  A: [[1, 0.1], [0, 1]]   # nx x nx, required
//	  B: [[0.005], [0.1]]     # nx x nu, required (a flat list is one column)
//	  C: [[1, 0]]             # ny x nx, required (a flat list is one row)
//	  x0: [0, 0]              # initial state, default zeros
//
// # controller (cloud-control)
//
// The observer-based controller of eq. (24): u(t) = -K (xhat(t) - x_r(t)),
// xhat(t+1) = A xhat + B u + L (yhat - C xhat). Give K or lqr, and L or observer:
//
//	controller:
//	  K: [3.4240, 4.3095]     # nu x nx (a flat list is one row: the paper's K_P transposed)
//	  L: [0.8266, 0.6973]     # nx x ny (a flat list is one column)
//	  # or derive them as the paper's authors did:
//	  lqr:      {Q: 20, R: 1} # K = dlqr(A, B, Q, R); Q is nx x nx, R nu x nu
//	  observer: {Q: 2, R: 1}  # L = dlqr(A', C', Q, R)'; Q is nx x nx, R ny x ny
//	  reference: tanh         # default zero
//	  xhat0: [0, 0]           # the observer's initial estimate, default zeros
//
// reference is one of
//
//   - tanh: the paper's profile x_r(t) = (tanh(t), 1 - |tanh(t - 9)|), t the step index
//     (Section 5.3; plants with 2 states only);
//   - zero: x_r(t) = 0;
//   - a constant vector, e.g. [1, 0] (nx entries);
//   - {step: {before: [0, 0], after: [1, 0], at: 50}}: before for t < at, after from step
//     at on (at in 0 .. steps-1).
//
// # graph and x0 (consensus)
//
// The communication graph of eq. (25), either named
//
//	graph: {name: paper10}                     # the paper's 10-node graph (Fig. 4), weight 1/4
//	graph: {name: ring, n: 20}                 # n >= 3
//	graph: {name: path, n: 20}                 # n >= 2
//	graph: {name: complete, n: 20}             # n >= 2
//	graph: {name: grid, rows: 4, cols: 5}      # n = rows * cols (n may be given, and must agree)
//	graph: {name: random-regular, n: 100, degree: 4, seed: 1}  # degree 2 .. n-1, n * degree even;
//	                                           # seed of the topology (default 1), not of the runs
//
// with an optional weight (every edge; default 1/4 for paper10 and 1/(max degree + 1)
// otherwise, so that every node's sum_j w_ij < 1), or an edge list whose nodes count from
// 1, as in the paper:
//
//	graph:
//	  n: 4
//	  edges: [[1, 2], [2, 3, 0.1], [3, 4]]   # [i, j] or [i, j, w]
//	  weight: 0.25                           # for edges without w; default 1/(max degree + 1)
//
// An edge list must have nodes in 1..n, no self-loops, no repeated edges (in either
// direction), positive weights, and be connected. Parameters a named graph does not use
// are refused. In the Scenario, GraphSpec nodes count from 0 (as in pkg/dynamics).
//
// x0 (top level) holds one initial value per node: x0: [10, 100, 20, ...].
//
// # privacy
//
//	privacy:
//	  mechanism: gaussian     # gaussian (Theorem 1, default) | laplace (Theorem 2)
//	  epsilon: 1              # required, > 0
//	  delta: 0.01             # gaussian: required, in (0, 1); laplace: 0 or absent
//	  mu: 1                   # adjacency level, > 0, default 1
//	  adjacency: manifold     # manifold (Definition 4, default) | block (Theorem 3)
//	  noise: structured       # structured (Algorithm 1, default) | iid-calibrated | iid-naive | none
//	  calibration: tight      # tight (default) | paper-bound | classic (epsilon < 1 only); gaussian only
//	  sampler: secure         # secure (default: exact samplers, the release rounded exactly to a grid;
//	                          # docs/math.md section 10) | float (textbook float64 noise: demonstrations)
//	  model: {A: 1, C: 1}     # cloud-control only: the private subsystem (default: the plant)
//
// model is the subsystem whose trajectory is protected, z(t+1) = A z, y = C z; its C has
// one row per plant output, since its noise gamma(t) = C A^t sqrt(Sigma) eta is added to
// the plant's outputs. The paper's vehicle protects the position only: A = 1, C = 1. The
// names are those of pkg/privacy (ParseMechanism, ParseAdjacency, ParseCalibration) and
// pkg/noise (ParseKind).
//
// The budget above is per episode. To calibrate for a whole run of k episodes of the same secret
// (docs/math.md section 9), give run_epsilon and episodes instead of epsilon:
//
//	privacy:
//	  run_epsilon: 4          # the whole run's epsilon, > 0 (excludes epsilon)
//	  episodes: 16            # the episodes it covers, integer >= 1 (needs run_epsilon, and vice versa)
//	  delta: 1e-3             # the whole run's delta (gaussian: in (0, 1); laplace: [0, 1), default 0)
//
// Each episode is then calibrated for its share (Gaussian: mu_episode = mu_run/sqrt(k), exact;
// Laplace: the largest eps whose optimal k-fold composition is run_epsilon), PrivacySpec.Epsilon
// and Delta hold that share, and a top-level episodes greater than privacy.episodes draws a
// warning. A delta sweep sweeps the run's
// delta; an epsilon sweep is refused with run_epsilon.
//
// # sweep
//
// A scenario may sweep privacy parameters; Expand returns one scenario per value:
//
//	sweep: {param: epsilon, values: [1e-2, 5e-2, 1e-1, 5e-1, 1, 5, 10]}
//
// param is one of epsilon, delta, mu (values are numbers) or noise, calibration, adjacency
// (values are names), or a fault parameter: faults.delay, faults.jitter, faults.drop,
// faults.duplicate, faults.reorder (numbers, set on every rule of faults.links, which must
// have one) or faults.missing.plant, faults.missing.agent (rule names). A swept parameter may be left out of privacy. Every value is checked
// with the rest of the privacy section (a negative epsilon, a delta with laplace, classic
// with epsilon >= 1 are reported on the value). A list of sweeps is their Cartesian
// product, the first outermost:
//
//	sweep:
//	  - {param: epsilon, values: [0.1, 1, 10]}
//	  - {param: noise, values: [structured, iid-calibrated]}
//
// Expanded scenarios are named NAME@epsilon=0.1,noise=structured, record their values in
// Scenario.Point and keep the seed, so all points use the same random streams.
//
// # transport
//
// How the processes of a multi-process run are paced:
//
//	transport:
//	  mode: lockstep          # lockstep (default: each step when its messages arrived) | realtime
//	  period: 100ms           # a duration: one step on the wall clock; required for realtime
//
// # faults
//
// What each role does when a step's input is missing, and the faults the network injects
// per link (a link is one publisher to one subscriber, the eavesdropper included):
//
//	faults:
//	  missing:
//	    plant: hold             # cloud-control: u(t) missing -> hold the newest u received | zero
//	    agent: reuse-last       # consensus: y_j(t) missing -> the newest y_j received | skip
//	  links:
//	    - name: u-delay         # optional label (default link<k>); unique
//	      from: cloud.0         # publisher: plant.0, cloud.0, agent.<i>, agent.*, * (default *)
//	      to: plant.0           # subscriber: as from, or eavesdropper.0 (default *)
//	      subject: agent.*.y    # instead of from: the data subject below dpsim.<run>. (* and >)
//	      unit: steps           # steps (default) | ms (wall clock: NATS path, realtime only)
//	      delay: 2              # fixed delay, >= 0
//	      random_delay: {dist: exponential, mean: 1}   # added: uniform {min, max}, exponential
//	                            # {mean}, normal {mean, sd} (truncated at 0), lognormal {mu, sigma}
//	      jitter: 0.5           # uniform in [-jitter, jitter], added; the total is clamped at 0
//	      drop: 0.1             # loss probability
//	      duplicate: 0.05       # probability of a second copy
//	      reorder: 0.05         # probability of being held behind the link's next message
//	      window: [20, 40]      # only the messages of steps 20..39 (or {from, to})
//	  crashes:                  # kill a process (SIGKILL) and restart it from its checkpoint
//	    - {proc: agent.3, episode: 1, step: 10, restart: 15, noise: resume}  # episode: all | k;
//	                            # noise: resume (the checkpoint's draw) | redraw (leak demo)
//	  partitions:               # drop everything between agents and the others in a window
//	    - {name: halves, agents: [0, 1, 2, 3, 4], window: [10, 20]}
//	  server_restarts:          # stop the embedded server at a step, start it after down
//	    - {episode: 2, step: 50, down: 1s}
//	  proxies:                  # toxiproxy between one process and the server
//	    - {proc: plant.0, latency: 8ms, jitter: 6ms, bandwidth: 0, resets: [{episode: 1, step: 50}]}
//
// process_faults.go documents the crash, partition, server and proxy faults field by field.
// transport.timeout (a duration) bounds the processes' wait for one step's messages (default
// the launcher's --timeout): a scenario where messages are lost in transport sets it short.
//
// Every rule that matches a link applies with its own random draws (delays add; a message is
// lost, duplicated or reordered if any rule says so), drawn from the run seed, the rule, the
// link, the episode and the step only: runs are reproducible, and the fast engine and a
// lockstep NATS run give the same numbers. The cloud's rule (predict yhat(t) = C xhat(t)) and
// the eavesdropper's (estimate from what arrived) are fixed. Without a faults section every
// link is clear and the rules are hold and reuse-last.
//
// # audit
//
// Defaults for `dpsim audit` (the empirical privacy audit, docs/math.md section 6); its flags
// override them, and every field is optional:
//
//	audit:
//	  trials: 1000000         # trials per value of the secret bit (N on x, N on x'): 10 .. 10^9
//	  adjacency: manifold     # the adjacency to audit (default: privacy.adjacency, the one the
//	                          # noise is calibrated for); may differ from it
//	  confidence: 0.95        # joint confidence level of the reported bounds, in (0, 1)
//	  pair:                   # the adjacent pair (default: the worst pair of the sensitivity)
//	    x0: [0, 0]            # cloud-control: the plant's x(0), nx values;
//	    x0prime: [1, 0]       # consensus: every agent's x_i(0), one value per node
//
// x0 = x0prime is allowed: the system then does not depend on the secret, which audits the
// auditor (its bounds must stay at 0). With a sweep, the audit section applies to every point.
//
// # Shipped scenarios
//
// The scenarios/ directory of the repository holds the paper's setups, each file
// commented: cloud-vehicle (Section 5.3, position private), cloud-vehicle-fullstate (full
// state private, manifold adjacency), cloud-vehicle-lqr (gains from LQR weights),
// cloud-vehicle-sweep (Fig. 3), consensus-gaussian and consensus-laplace (Section 6.3), and
// the audit demonstrations audit-*.yaml.
package scenario
