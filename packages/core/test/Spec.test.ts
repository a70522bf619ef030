import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as Spec from "../src/Spec.js"

describe("Spec", () => {
  it("fills the defaults", () => {
    const spec = Spec.validate({ name: "scout" })
    assert.isTrue(Either.isRight(spec))
    if (Either.isRight(spec)) {
      assert.deepInclude(spec.right, {
        name: "scout",
        lifecycle: "session",
        role: "member",
        model: "sonnet",
        permission: "read_only",
        cwd: ".",
        timeout: 180_000
      })
    }
  })

  it("never throws: every bad field is reported with its path", () => {
    const result = Spec.validate({ name: "ok", timeout: -5, permission: "root", model: "" }, {}, "agents[3]")
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) {
      const paths = result.left.map((r) => r.path).sort()
      assert.deepStrictEqual(paths, ["agents[3].model", "agents[3].permission", "agents[3].timeout"])
      assert.isTrue(result.left.every((r) => r.name === "ok" && r.message.length > 0))
    }
    assert.isTrue(Either.isLeft(Spec.validate("not an object")))
    assert.isTrue(Either.isLeft(Spec.validate(null)))
  })

  it("refuses a write-capable session but keeps a write-capable run", () => {
    for (const permission of ["full", { allow: ["Read", "Bash"] }] as const) {
      const session = Spec.validate({ name: "w", permission })
      assert.isTrue(Either.isLeft(session))
      if (Either.isLeft(session)) assert.match(session.left[0]!.message, /write-capable session is refused/)
    }
    assert.isTrue(Either.isRight(Spec.validate({ name: "r", lifecycle: "run", permission: "full", worktree: true })))
    assert.isTrue(Either.isRight(Spec.validate({ name: "g", permission: { allow: ["Read", "Grep"] } })))
  })

  it("keeps a session whose writes wait for a human (ask), and refuses a tool both allowed and asked", () => {
    assert.isTrue(Either.isRight(Spec.validate({ name: "h", permission: { allow: ["Read"], ask: ["Write", "Bash"] } })))
    assert.isTrue(Either.isRight(Spec.validate({ name: "a", permission: "ask" })))
    const both = Spec.validate({ name: "b", permission: { allow: ["Write"], ask: ["Write"] } })
    assert.isTrue(Either.isLeft(both))
    if (Either.isLeft(both)) assert.match(both.left[0]!.message, /Write cannot be both in allow and in ask/)
  })

  it("merges fleet defaults under each entry; the entry wins", () => {
    const fleet = Spec.readFleet({
      fleetDefaults: { model: "opus", cwd: "/srv" },
      agents: [{ name: "a" }, { name: "b", model: "haiku" }, { name: "a" }]
    })
    assert.deepStrictEqual(fleet.sessions.map((s) => [s.name, s.model, s.cwd]), [["a", "opus", "/srv"], [
      "b",
      "haiku",
      "/srv"
    ]])
    assert.deepStrictEqual(fleet.rejected.map((r) => r.message), ["duplicate name \"a\" (agents[0] has it already)"])
  })

  it("reports a bad top level instead of throwing", () => {
    assert.strictEqual(Spec.readFleet({ agents: {} }).rejected[0]!.path, "agents")
    assert.strictEqual(Spec.readFleet(42).rejected[0]!.path, "config")
    assert.strictEqual(Spec.readFleet({ fleetDefaults: [] }).rejected[0]!.path, "fleetDefaults")
    assert.deepStrictEqual(Spec.readFleet({}).sessions, [])
  })

  it("says what each section should be, and goes on without the bad one", () => {
    const fleet = Spec.readFleet({ fleetDefaults: { name: "all", model: "opus" }, agents: [{ name: "a" }] })
    assert.deepStrictEqual(fleet.rejected.map((r) => [r.path, r.message]), [
      ["fleetDefaults", "expected an object of agent fields (without a name); defaults were ignored"]
    ])
    assert.deepStrictEqual(fleet.sessions.map((s) => [s.name, s.model]), [["a", "sonnet"]])
    assert.deepStrictEqual(Spec.readFleet({ agents: "a" }).rejected.map((r) => r.message), [
      "expected an array of agent entries"
    ])
    assert.deepStrictEqual(Spec.readFleet([]).rejected.map((r) => r.message), ["expected an object"])
  })

  it("says each mistake in an entry in words, at its path", () => {
    const fleet = Spec.readFleet({
      agents: [
        { name: "a", permision: "read_only" },
        { name: "b", permission: "readonly" },
        { name: "c", lifecycle: "sesion" },
        { name: "d", timeout: "3 minutes" }
      ]
    })
    assert.deepStrictEqual(fleet.rejected.map(Spec.describeRejected), [
      "agents[0].permision: unknown field; did you mean \"permission\"?",
      "agents[1].permission: expected \"read_only\", \"full\", \"ask\" or { allow, ask? }, got \"readonly\"",
      "agents[2].lifecycle: expected \"session\" or \"run\", got \"sesion\"",
      "agents[3].timeout: expected a number, got \"3 minutes\""
    ])
  })

  it("a bad default is named in fleetDefaults and ignored; a default an entry cannot take names both", () => {
    const typo = Spec.readFleet({ fleetDefaults: { modle: "opus", sandbox: "yes" }, agents: [{ name: "a" }] })
    assert.deepStrictEqual(typo.rejected.map(Spec.describeRejected), [
      "fleetDefaults.modle: unknown field; did you mean \"model\"?",
      "fleetDefaults.sandbox: expected true, false or { network?, writable? }, got \"yes\""
    ])
    assert.deepStrictEqual(typo.sessions.map((s) => s.name), ["a"])
    const worktree = Spec.readFleet({
      fleetDefaults: { worktree: true },
      agents: [{ name: "s" }, { name: "r", lifecycle: "run" }, { name: "own", worktree: true }]
    })
    assert.deepStrictEqual(worktree.templates.map((t) => t.name), ["r"])
    assert.deepStrictEqual(worktree.rejected.map((r) => [r.entry, r.path]), [
      ["agents[0]", "fleetDefaults.worktree"],
      ["agents[2]", "agents[2].worktree"]
    ])
    assert.match(
      Spec.describeRejected(worktree.rejected[0]!),
      /^agents\[0\]: fleetDefaults\.worktree: a session has no/
    )
  })

  it("says what is wrong with a name another entry gives for a session or a run template", () => {
    const fleet = Spec.readFleet({
      agents: [
        { name: "scout" },
        { name: "issue-runner", lifecycle: "run", worktree: true },
        { name: "broken", lifecycle: "run", model: "" }
      ]
    })
    // [the name given, what it must be, the problem (none where it is what it must be)]
    const cases: ReadonlyArray<readonly [string, "run" | "session", string | undefined]> = [
      ["issue-runner", "run", undefined],
      ["scout", "session", undefined],
      ["scout", "run", "\"scout\" is a session; this needs a run template (an agent entry with lifecycle: \"run\")"],
      [
        "issue-runner",
        "session",
        "\"issue-runner\" is a run template; this needs a session (an agent entry with lifecycle: \"session\")"
      ],
      ["broken", "run", "the run template \"broken\" is skipped itself (agents[2] is invalid)"],
      ["issue-runer", "run", "no run template named \"issue-runer\" in agents; did you mean \"issue-runner\"?"]
    ]
    for (const [name, kind, problem] of cases) {
      assert.strictEqual(Spec.referenceProblem(fleet, name, kind), problem, `${name} as a ${kind}`)
    }
  })

  it("turns a spec into the options of an agent and of a run", () => {
    const spec = Either.getOrThrow(Spec.validate({ name: "r", lifecycle: "run", prompt: "go", maxTurns: 3 }))
    assert.deepStrictEqual(Spec.agentOptions(spec), {
      cwd: ".",
      model: "sonnet",
      permission: "read_only",
      timeout: 180_000
    })
    assert.deepStrictEqual(Spec.runOptions(spec), {
      cwd: ".",
      model: "sonnet",
      permission: "read_only",
      timeout: 180_000,
      prompt: "go",
      maxTurns: 3
    })
  })
})
