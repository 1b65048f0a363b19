// Package endpoint is the one vocabulary of who talks in a dpsim run: the roles, an endpoint
// (one instance of a role, "<role>.<id>": plant.0, cloud.0, agent.i, host.i, eavesdropper.0,
// launcher.0) and the data stream each role publishes. The machine (pkg/sim) addresses its
// cores by Endpoint and the transport (pkg/bus) builds its subjects and sender names from the
// same values, so no layer maps one vocabulary onto another by hand.
//
// An Endpoint is a small comparable value (a map key, no allocation); its String is the
// sender name on the wire, and Parse reads it back.
package endpoint
