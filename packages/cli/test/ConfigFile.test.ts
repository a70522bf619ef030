/**
 * The config file, decoded once into one section per layer, with the environment's one mapping on top.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ConfigFile from "../src/ConfigFile.js"

/** A project directory holding `config` as flotta.config.json, removed with the scope. */
const project = (config: unknown) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "flotta-config-"))
      fs.writeFileSync(path.join(dir, "flotta.config.json"), JSON.stringify(config))
      return dir
    }),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

const load = (dir: string, env: Record<string, string> = {}, assume: ReadonlyArray<string> = []) =>
  ConfigFile.load(dir, undefined, { assume }).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.provide(NodeContext.layer)
  )

describe("one Schema, one section per layer", () => {
  it("a full file decodes into the engine's, the MCP server's and the scheduler's sections", () => {
    const decoded = ConfigFile.decode("f.json", {
      maxConcurrentStarts: 3,
      fleetDefaults: { model: "haiku" },
      agents: [{ name: "scout" }, { name: "runner", lifecycle: "run", worktree: true }, { name: "Bad" }],
      mcp: { port: 5000, sessionIdleTimeoutMs: 1000 },
      schedule: { timezone: "utc", hours: { mon: ["09:00-17:00"] } },
      routines: [{ name: "scan", action: "scan", every: { dailyAt: "09:00" } }, { name: "broken", action: "nope" }]
    })
    if (Either.isLeft(decoded)) return assert.fail(decoded.left.message)
    const config = decoded.right
    assert.strictEqual(config.fleet.maxConcurrentStarts, 3)
    assert.deepStrictEqual(config.fleet.fleet.sessions.map((s) => [s.name, s.model]), [["scout", "haiku"]])
    assert.deepStrictEqual(config.fleet.fleet.templates.map((s) => s.name), ["runner"])
    assert.deepStrictEqual(config.fleet.fleet.rejected.map((r) => r.path), ["agents[2].name"])
    assert.deepStrictEqual(config.mcp, { port: 5000, sessionIdleTimeout: 1000 })
    assert.deepStrictEqual(config.schedule?.routines.map((r) => r.name), ["scan"])
    assert.deepStrictEqual(config.schedule?.rejected.map((r) => r.path), ["routines[1].action"])
  })

  it("an absent or switched-off section is undefined: its layer is not there", () => {
    const bare = Either.getOrThrow(ConfigFile.decode("f.json", {}))
    assert.isUndefined(bare.mcp)
    assert.isUndefined(bare.schedule)
    assert.isUndefined(Either.getOrThrow(ConfigFile.decode("f.json", { mcp: { enabled: false, port: 1 } })).mcp)
  })

  it("the dashboard section: empty shares the MCP server, a port gives it its own, enabled: false turns it off", () => {
    assert.deepStrictEqual(Either.getOrThrow(ConfigFile.decode("f.json", { dashboard: {} })).dashboard, {})
    assert.deepStrictEqual(
      Either.getOrThrow(ConfigFile.decode("f.json", { dashboard: { port: 4100, token: "0123456789abcdef-t" } }))
        .dashboard,
      { port: 4100, token: "0123456789abcdef-t" }
    )
    assert.isUndefined(Either.getOrThrow(ConfigFile.decode("f.json", { dashboard: { enabled: false } })).dashboard)
    assert.isUndefined(Either.getOrThrow(ConfigFile.decode("f.json", {})).dashboard)
    const short = ConfigFile.decode("f.json", { dashboard: { token: "short" } })
    assert.isTrue(Either.isLeft(short) && /f\.json: dashboard\.token: at least 16 characters/.test(short.left.message))
    const extra = ConfigFile.decode("f.json", { dashboard: { prot: 1 } })
    assert.isTrue(
      Either.isLeft(extra) && /dashboard\.prot: unknown field; did you mean "port"\?/.test(extra.left.message)
    )
  })

  it("a bad top-level field or a bad schedule stops the command, naming the file and the path", () => {
    const port = ConfigFile.decode("f.json", { mcp: { port: "eighty" } })
    assert.isTrue(Either.isLeft(port) && /f\.json: mcp\.port: expected a number, got "eighty"/.test(port.left.message))
    const unknown = ConfigFile.decode("f.json", { agent: [] })
    assert.isTrue(
      Either.isLeft(unknown) && /f\.json: agent: unknown field; did you mean "agents"\?/.test(unknown.left.message)
    )
    const zone = ConfigFile.decode("f.json", { schedule: { timezone: "Mars/Olympus", hours: {} } })
    assert.isTrue(Either.isLeft(zone) && /f\.json: schedule\.timezone: .*unknown time zone/.test(zone.left.message))
  })
})

describe("mistakes in entries: skipped, each at its path, the rest kept", () => {
  const SECRET = "0123456789abcdef-github"
  const said = (raw: Record<string, unknown>) => {
    const decoded = ConfigFile.decode("f.json", raw)
    if (Either.isLeft(decoded)) return assert.fail(decoded.left.message)
    return decoded.right
  }

  it("lists every skipped entry in the file's order: agents, routines, GitHub mappings", () => {
    const config = said({
      agents: [
        { name: "scout" },
        { name: "helper", permision: "read_only" },
        { name: "runner", lifecycle: "run", worktree: true, permission: "full" }
      ],
      mcp: {},
      schedule: { timezone: "utc", hours: {} },
      routines: [
        { name: "fix-ci", action: "run", template: "runner" },
        { name: "check-in", action: "prompt", agent: "helper", prompt: "status?" },
        { name: "scan", action: "scan", evry: { dailyAt: "09:00" } }
      ],
      github: {
        secret: SECRET,
        on: [
          { event: "check_run.completed", routine: "fix-ci" },
          { event: "issues.labeled", routine: "check-in" },
          { event: "issues.opened", run: "scout" },
          { event: "issues.closed", routine: "fixci" }
        ]
      }
    })
    assert.deepStrictEqual(config.skipped.map((r) => `${r.path}: ${r.message}`), [
      "agents[1].permision: unknown field; did you mean \"permission\"?",
      "routines[1].agent: the session \"helper\" is skipped itself (agents[1] is invalid)",
      "routines[2].evry: unknown field; did you mean \"every\"?",
      "github.on[1].routine: the routine \"check-in\" is skipped itself (routines[1] is invalid)",
      "github.on[2].run: \"scout\" is a session; this needs a run template (an agent entry with lifecycle: \"run\")",
      "github.on[3].routine: no routine named \"fixci\" in routines; did you mean \"fix-ci\"?"
    ])
    // The rest is there to boot.
    assert.deepStrictEqual(config.fleet.fleet.sessions.map((s) => s.name), ["scout"])
    assert.deepStrictEqual(config.schedule?.routines.map((r) => r.name), ["fix-ci"])
    assert.deepStrictEqual(config.schedule?.rejected.map((r) => r.path), ["routines[1].agent", "routines[2].evry"])
    assert.deepStrictEqual(config.github?.on.map((m) => m.routine), ["fix-ci"])
  })

  it("routines without a schedule section never run: said once, at routines", () => {
    const config = said({ routines: [{ name: "scan", action: "scan" }] })
    assert.deepStrictEqual(config.skipped.map((r) => r.path), ["routines"])
    assert.match(config.skipped[0]!.message, /^there is no schedule section, so no routine runs: add one/)
    assert.deepStrictEqual(said({ routines: [] }).skipped, [])
    const mapped = said({
      agents: [{ name: "r", lifecycle: "run" }],
      mcp: {},
      github: { secret: SECRET, on: [{ event: "issues", routine: "scan" }, { event: "issues", run: "r" }] }
    })
    assert.deepStrictEqual(mapped.skipped.map((r) => `${r.path}: ${r.message}`), [
      "github.on[0].routine: names the routine \"scan\", but there is no schedule section, so no routine runs"
    ])
  })

  it("a bad fleet default stops the command, since it would change every agent", () => {
    const typo = ConfigFile.decode("f.json", { fleetDefaults: { permision: "full" }, agents: [{ name: "a" }] })
    assert.isTrue(Either.isLeft(typo))
    assert.strictEqual(
      Either.isLeft(typo) ? typo.left.message : "",
      "f.json: fleetDefaults.permision: unknown field; did you mean \"permission\"?"
    )
    const named = ConfigFile.decode("f.json", { fleetDefaults: { name: "all" } })
    assert.isTrue(Either.isLeft(named) && named.left.path === "fleetDefaults")
  })
})

describe("the environment's mapping", () => {
  it.scoped("a variable overrides the field it names, in a section the file has", () =>
    Effect.gen(function*() {
      const dir = yield* project({ maxConcurrentStarts: 2, mcp: { port: 4100 } })
      const config = yield* load(dir, {
        FLOTTA_MAX_CONCURRENT_STARTS: "7",
        FLOTTA_MCP_PORT: "4200",
        FLOTTA_MCP_HOST: "localhost",
        FLOTTA_MCP_TOKEN: "0123456789abcdef-token"
      })
      assert.strictEqual(config.fleet.maxConcurrentStarts, 7)
      assert.deepStrictEqual(config.mcp, { port: 4200, host: "localhost", token: "0123456789abcdef-token" })
    }))

  it.scoped("a variable never switches a section on, unless the command assumes it (the client commands)", () =>
    Effect.gen(function*() {
      const dir = yield* project({})
      assert.isUndefined((yield* load(dir, { FLOTTA_MCP_PORT: "4200" })).mcp)
      assert.deepStrictEqual((yield* load(dir, { FLOTTA_MCP_PORT: "4200" }, ["mcp"])).mcp, { port: 4200 })
    }))

  it.scoped("a bad value names the variable and what was expected", () =>
    Effect.gen(function*() {
      const dir = yield* project({ mcp: {} })
      const bad = yield* Effect.flip(load(dir, { FLOTTA_MCP_PORT: "eighty" }))
      assert.strictEqual(bad._tag, "ConfigFileError")
      assert.match(bad.message, /FLOTTA_MCP_PORT: expected an integer, got "eighty"/)
      const range = yield* Effect.flip(load(dir, { FLOTTA_MCP_PORT: "70000" }))
      assert.match(range.message, /mcp\.port/)
    }))
})

describe("the store", () => {
  const base = path.join(os.tmpdir(), "project")
  const decodeStore = (store: unknown) => ConfigFile.decode(path.join(base, "flotta.config.json"), { store })
  const decoded = (store: unknown) => {
    const result = decodeStore(store)
    if (Either.isLeft(result)) return assert.fail(result.left.message)
    return result.right.store
  }
  const refused = (store: unknown) => {
    const result = decodeStore(store)
    if (Either.isRight(result)) return assert.fail(`${JSON.stringify(store)} was accepted`)
    return result.left
  }

  it("takes memory, an SQLite file (relative to the project) or a Postgres database, with retainDays", () => {
    assert.isUndefined(Either.getOrThrow(ConfigFile.decode("f.json", {})).store)
    assert.deepStrictEqual(decoded("memory"), { config: "memory" })
    assert.deepStrictEqual(decoded({ sqlite: ".flotta/state.db" }), {
      config: { sqlite: path.join(base, ".flotta", "state.db") }
    })
    assert.deepStrictEqual(decoded({ sqlite: "/var/lib/flotta.db", retainDays: 7 }), {
      config: { sqlite: "/var/lib/flotta.db" },
      retainDays: 7
    })
    assert.deepStrictEqual(decoded({ postgres: "postgres://u:p@db:5432/fleet" }), {
      config: { postgres: "postgres://u:p@db:5432/fleet" }
    })
    assert.deepStrictEqual(
      decoded({ postgres: { url: "postgresql://db/fleet", schema: "team_a" }, retainDays: 90 }),
      { config: { postgres: { url: "postgresql://db/fleet", schema: "team_a" } }, retainDays: 90 }
    )
  })

  it("a bad value is refused, naming the field within store and what was expected", () => {
    const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
      [
        "disk",
        /store: expected "memory", \{ "sqlite": "path" \} or \{ "postgres": "postgres:\/\/\.\.\." \}, got "disk"/
      ],
      [3, /store: expected "memory".*got 3/],
      [{}, /store: expected "memory".*got \{\}/],
      [{ sqlite: "" }, /store\.sqlite: expected the path of an SQLite file, got ""/],
      [{ sqlite: 7 }, /store\.sqlite: expected the path of an SQLite file, got 7/],
      [{ sqlite: "a.db", postgres: "postgres://db/x" }, /store: give one of sqlite or postgres, not both/],
      [{ sqlite: "a.db", retainDays: 0 }, /store\.retainDays: expected a whole number of days above 0, got 0/],
      [{ sqlite: "a.db", retainDays: "30" }, /store\.retainDays: .*got "30"/],
      [{ sqlite: "a.db", retain: 3 }, /store\.retain: unknown field; did you mean "retainDays"\?/],
      [{ postgres: "mysql://db/x" }, /store\.postgres: expected a postgres:\/\/.* URL, got "mysql:\/\/db\/x"/],
      [
        { postgres: 5 },
        /store\.postgres: expected a postgres:\/\/ URL or \{ "url": \.\.\., "schema": \.\.\. \}, got 5/
      ],
      [{ postgres: { schema: "a" } }, /store\.postgres\.url: expected a postgres:\/\/.* URL, got nothing/],
      [{ postgres: { url: "postgres://db/x", schema: "1-bad" } }, /store\.postgres\.schema: expected a schema name/],
      [{ postgres: { url: "postgres://db/x", user: "me" } }, /store\.postgres\.user: unknown field; expected one of/]
    ]
    for (const [store, expected] of cases) {
      const error = refused(store)
      assert.strictEqual(error._tag, "ConfigFileError")
      assert.match(error.message, expected, JSON.stringify(store))
      assert.include(error.message, "flotta.config.json: store", JSON.stringify(store))
    }
  })

  it.scoped("relative paths are under the project directory: the one holding .flotta/ for .flotta/config.json", () =>
    Effect.gen(function*() {
      const dir = yield* project({})
      fs.mkdirSync(path.join(dir, ".flotta"))
      fs.rmSync(path.join(dir, "flotta.config.json"))
      fs.writeFileSync(path.join(dir, ".flotta", "config.json"), JSON.stringify({ store: { sqlite: "state.db" } }))
      const config = yield* load(dir)
      assert.strictEqual(config.dir, dir)
      assert.deepStrictEqual(config.store, { config: { sqlite: path.join(dir, "state.db") } })
      assert.strictEqual(ConfigFile.projectDir(path.join(dir, "flotta.config.json")), dir)
      // No config file: the directory looked in.
      const bare = yield* ConfigFile.load(path.join(dir, ".flotta")).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map())),
        Effect.provide(NodeContext.layer)
      )
      assert.strictEqual(bare.dir, path.join(dir, ".flotta"))
    }))

  it.scoped("FLOTTA_STORE overrides it: memory, an SQLite file (from here), or a postgres:// URL", () =>
    Effect.gen(function*() {
      const dir = yield* project({ store: { sqlite: "file.db", retainDays: 5 } })
      assert.deepStrictEqual((yield* load(dir, { FLOTTA_STORE: "memory" })).store, { config: "memory" })
      assert.deepStrictEqual((yield* load(dir, { FLOTTA_STORE: "other.sqlite" })).store, {
        config: { sqlite: path.resolve("other.sqlite") },
        retainDays: 5
      })
      assert.deepStrictEqual((yield* load(dir, { FLOTTA_STORE: "/abs/state.db" })).store, {
        config: { sqlite: "/abs/state.db" },
        retainDays: 5
      })
      assert.deepStrictEqual((yield* load(dir, { FLOTTA_STORE: "postgres://u:p@db/fleet" })).store, {
        config: { postgres: "postgres://u:p@db/fleet" },
        retainDays: 5
      })
      const bare = yield* project({})
      assert.deepStrictEqual((yield* load(bare, { FLOTTA_STORE: "/abs/state.db" })).store, {
        config: { sqlite: "/abs/state.db" }
      })
      for (const value of ["memroy", "state", "https://db/x"]) {
        const bad = yield* Effect.flip(load(dir, { FLOTTA_STORE: value }))
        assert.strictEqual(bad._tag, "ConfigFileError")
        assert.match(
          bad.message,
          /FLOTTA_STORE: expected memory, an SQLite file \(ending \.db, \.sqlite or \.sqlite3\) or a postgres:\/\/ URL/
        )
      }
      assert.isTrue(ConfigFile.ENVIRONMENT.some((o) => o.variable === "FLOTTA_STORE" && o.path[0] === "store"))
    }))
})

describe("the webhooks' sections", () => {
  const SECRET = "0123456789abcdef-github"

  it("notify and github decode into their sections (undefined when absent); a bad entry names its path", () => {
    const decoded = Either.getOrThrow(ConfigFile.decode("f.json", {
      agents: [{ name: "issue-runner", lifecycle: "run", worktree: true }],
      mcp: {},
      notify: [{ url: "https://hooks.example.com/a/b", events: ["run_finished", "approval_requested"] }],
      github: { secret: SECRET, on: [{ event: "issues.labeled", label: "flotta", run: "issue-runner" }] }
    }))
    assert.deepStrictEqual(decoded.notify, [
      { url: "https://hooks.example.com/a/b", events: ["run_finished", "approval_requested"] }
    ])
    assert.deepStrictEqual(decoded.github?.on.map((m) => m.run), ["issue-runner"])
    const bare = Either.getOrThrow(ConfigFile.decode("f.json", {}))
    assert.isUndefined(bare.notify)
    assert.isUndefined(bare.github)

    const cases: ReadonlyArray<readonly [Record<string, unknown>, RegExp]> = [
      [{ notify: [{ url: "ftp://x", events: ["*"] }] }, /f\.json: notify\[0\]\.url: an http:\/\/ or https:\/\/ URL/],
      [
        { notify: [{ url: "https://x.example", events: ["*"] }, { url: "https://y.example", events: ["nope"] }] },
        /f\.json: notify\[1\]\.events\[0\]: /
      ],
      [
        { notify: [{ url: "https://x.example", events: ["*"], secret: "short" }] },
        /notify\[0\]\.secret: a secret of at least 16 characters/
      ],
      [{ mcp: {}, github: { secret: SECRET, on: [{ event: "push", run: "x" }] } }, /f\.json: github\.on\[0\]\.event: /],
      [
        { mcp: {}, github: { secret: SECRET, on: [{ event: "issues", run: "x", routine: "y" }] } },
        /github\.on\[0\]\.routine: name exactly one of `routine` and `run`/
      ]
    ]
    for (const [raw, expected] of cases) {
      const result = ConfigFile.decode("f.json", raw)
      assert.isTrue(Either.isLeft(result), JSON.stringify(raw))
      if (Either.isLeft(result)) assert.match(result.left.message, expected)
    }
  })

  it("github needs a server to take the hooks: an mcp or a dashboard section", () => {
    const github = { secret: SECRET, on: [] }
    const alone = ConfigFile.decode("f.json", { github })
    assert.isTrue(Either.isLeft(alone))
    if (Either.isLeft(alone)) {
      assert.strictEqual(
        alone.left.message,
        "f.json: github: the hooks need an HTTP server to listen on: add an mcp section (or a dashboard section)"
      )
    }
    assert.isTrue(Either.isLeft(ConfigFile.decode("f.json", { github, mcp: { enabled: false } })))
    assert.isTrue(Either.isRight(ConfigFile.decode("f.json", { github, dashboard: { port: 4100 } })))
    // Notifications go out without a server.
    assert.isTrue(
      Either.isRight(ConfigFile.decode("f.json", { notify: [{ url: "https://x.example", events: ["*"] }] }))
    )
  })

  it.scoped("FLOTTA_GITHUB_SECRET overrides github.secret, in a github section the file has", () =>
    Effect.gen(function*() {
      const dir = yield* project({ mcp: {}, github: { secret: SECRET, on: [] } })
      const config = yield* load(dir, { FLOTTA_GITHUB_SECRET: "from-the-environment-0123" })
      assert.strictEqual(config.github?.secret, "from-the-environment-0123")
      const short = yield* Effect.flip(load(dir, { FLOTTA_GITHUB_SECRET: "short" }))
      assert.match(short.message, /github\.secret: a secret of at least 16 characters/)
      const without = yield* project({ mcp: {} })
      assert.isUndefined((yield* load(without, { FLOTTA_GITHUB_SECRET: "from-the-environment-0123" })).github)
    }))
})
