// Package starts checks that the local plane (cmd/butler-localplane) and the local provider's tenant
// control planes start every time on a busy machine and leave nothing behind:
//
//   - TestPlaneStartFailsCleanly (in make test): a port given in the environment is held by
//     another listener; the start fails, names the component and its log line, and leaves no
//     process.
//   - TestPlaneStartsUnderLoad and TestTenantControlPlanesUnderLoad (make test-starts, slow):
//     STARTS_N plane starts and stops in a row, then STARTS_TENANTS tenant control planes at
//     once, while a bounded load holds STARTS_CONNECTIONS loopback connections open and
//     replaces some every second (a busy machine's watches hold ephemeral ports the same way).
//     Every start must succeed and every stop leave no process.
//   - TestMakeRunStopsOnSIGTERM (make test-starts): `make run` stopped by SIGTERM as timeout(1)
//     sends it (make, then its process group) and as a supervisor that signals make alone: when
//     make has returned, no process of the plane or of make's group runs.
//   - TestTenantStartCost (make bench-start-cost, slow): tenants started at once and alone with
//     this tree's butler-localprovider and a baseline's, swapped into one plane in alternating
//     pairs; the CPU their kube-apiservers took until Ready and the time to Ready, in
//     _output/bench/start-cost.tsv.
//
// The figures go to _output/bench/starts.md and the table in docs/development/testing.md.
package starts
