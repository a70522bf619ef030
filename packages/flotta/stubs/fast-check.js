// What the bundles hold in place of the `fast-check` package: effect's Schema imports it for the arbitrary values of
// property tests (Arbitrary.make), which flotta never makes, so the test library is left out of what a command
// loads. Its names are absent: calling one fails with a TypeError.
export {}
