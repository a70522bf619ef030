/**
 * The proof a runner connection opens with: one fixed-length line per secret. The transport on real sockets
 * (its RPCs, its refusals, its deadline) is tested in the integration ring: test/cluster-transport.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Transport from "../src/Transport.js"

const SECRET = "cluster-secret-for-tests"

describe("Transport", () => {
  it("proof: one fixed-length line per secret", () => {
    const line = Transport.proof(SECRET).toString()
    assert.match(line, /^FLOTTA-CLUSTER\/1 [0-9a-f]{64}\n$/)
    assert.strictEqual(Transport.proof("another").length, line.length)
    assert.notStrictEqual(Transport.proof("another").toString(), line)
  })
})
