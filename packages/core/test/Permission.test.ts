/**
 * Permission as data: the flags a policy gives the CLI, the answer it gives each request, and the seam for a
 * decision the policy leaves open.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Flotta from "../src/Flotta.js"
import * as Permission from "../src/Permission.js"
import * as Testing from "../src/Testing.js"

describe("the policy's flags and answers", () => {
  it("each data form gives the CLI its tools and needs-no-prompt list", () => {
    assert.deepStrictEqual(Permission.flags("read_only"), [
      "--tools",
      "Read,Glob,Grep",
      "--allowedTools",
      "Read,Glob,Grep"
    ])
    assert.deepStrictEqual(Permission.flags({ allow: ["Read", "Bash(git *)"] }), [
      "--tools",
      "Read,Bash",
      "--allowedTools",
      "Read,Bash(git *)"
    ])
    assert.deepStrictEqual(Permission.flags("full"), [])
    assert.deepStrictEqual(Permission.flags(() => ({ behavior: "allow" })), [])
  })

  it("canWrite: anything beyond reading is a write", () => {
    assert.isFalse(Permission.canWrite("read_only"))
    assert.isFalse(Permission.canWrite({ allow: ["Read", "Grep"] }))
    assert.isTrue(Permission.canWrite({ allow: ["Read", "Bash(ls)"] }))
    assert.isTrue(Permission.canWrite("full"))
    assert.isTrue(Permission.canWrite(() => ({ behavior: "deny", message: "" })))
  })

  it.effect("answers: the data forms, a function's three shapes, and anything unclear denies", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* Permission.answer("full", "Bash", {}), { behavior: "allow" })
      assert.deepStrictEqual((yield* Permission.answer("read_only", "Read", {})).behavior, "allow")
      assert.match(
        JSON.stringify(yield* Permission.answer("read_only", "Write", {})),
        /Write is not allowed for a read-only agent/
      )
      assert.match(JSON.stringify(yield* Permission.answer({ allow: ["Edit"] }, "Bash", {})), /allow list \(Edit\)/)
      const sync = yield* Permission.answer(() => ({ behavior: "allow", updatedInput: { a: 1 } }), "X", {})
      assert.deepStrictEqual(sync, { behavior: "allow", updatedInput: { a: 1 } })
      const promised = yield* Permission.answer(() => Promise.resolve({ behavior: "deny", message: "no" }), "X", {})
      assert.deepStrictEqual(promised, { behavior: "deny", message: "no" })
      assert.deepStrictEqual(yield* Permission.answer(() => Effect.succeed({ behavior: "ask" }), "X", {}), {
        behavior: "ask"
      })
      const garbage = yield* Permission.answer(() => ({ behavior: "maybe" }) as never, "X", {})
      assert.strictEqual(garbage.behavior, "deny")
      const rejected = yield* Permission.answer(() => Promise.reject(new Error("down")), "X", {})
      assert.match(JSON.stringify(rejected), /policy failed/)
    }))
})

describe("the PendingDecisions seam", () => {
  const asks = () => ({ behavior: "ask" }) as const
  const writes = Testing.toolUse("Write", { file_path: "f" }, (d) => (d.behavior === "allow" ? "wrote" : d.message))

  it.effect("without an approver, an open decision denies and says why", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("asker", { permission: asks })
      assert.match(yield* fleet.ask("asker", "go"), /needs an approval, and no approver is configured/)
    }).pipe(
      Effect.provide(
        Flotta.services(Testing.cli({ model: () => writes }), {}, Permission.PendingDecisions.none).pipe(
          Layer.provide(NodeContext.layer)
        )
      )
    ))

  it.effect("an approver gets the request, with who asked and in which turn, and decides it", () =>
    Effect.gen(function*() {
      const seen: Array<Permission.PermissionRequest> = []
      const approver = Layer.succeed(Permission.PendingDecisions, {
        decide: (request) =>
          Effect.sync(() => {
            seen.push(request)
            return { behavior: "allow" } as const
          }),
        expire: () => Effect.void
      })
      const reply = yield* Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        yield* fleet.spawn("asker", { permission: asks })
        return yield* fleet.ask("asker", "go")
      }).pipe(
        Effect.provide(
          Flotta.services(Testing.cli({ model: () => writes }), {}, approver).pipe(Layer.provide(NodeContext.layer))
        )
      )
      assert.strictEqual(reply, "wrote")
      assert.strictEqual(seen.length, 1)
      assert.deepInclude(seen[0]!, { agent: "asker", turnId: "t1", tool: "Write", input: { file_path: "f" } })
      assert.match(seen[0]!.toolUseId ?? "", /^toolu_/)
    }))
})
