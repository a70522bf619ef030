/**
 * Two nodes in one process, each its own engine over the in-memory Claude, joined through one SQLite cluster
 * store and real runner sockets on 127.0.0.1 (so in the integration ring: leases run on the real clock): placement, calls across hosts, the fleet-wide list, runs and report log,
 * unique names, a node whose lease lapses (its agents come back on the other, its turn in flight ends with
 * HostLost, and the loss is reported once: `host_lost`), and the start-up checks. The clock is the real one (leases are the database's time); every wait
 * waits for a condition.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import type { AgentInfo, AgentOptions } from "@flotta/core/Agent"
import * as Options from "@flotta/core/AgentOptions"
import type { Flotta } from "@flotta/core/Flotta"
import { Flotta as FlottaTag } from "@flotta/core/Flotta"
import { Store } from "@flotta/core/Store"
import * as Testing from "@flotta/core/Testing"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Cluster from "../packages/cluster/src/Cluster.js"
import type { ClusterConfigInput } from "../packages/cluster/src/ClusterConfig.js"
import { ClusterStore } from "../packages/cluster/src/ClusterStore.js"
import { freePort } from "./support/ports.js"

const LEASE_MS = 3000

const model: Testing.Model = ({ prompt }) =>
  prompt.startsWith("slow") ? Testing.delay("30 seconds", "late") : `echo: ${prompt}`

interface Node {
  readonly fleet: Flotta
  readonly cluster: Cluster.Cluster["Type"]
  /** The node's own engine store: the rows of the agents it runs. */
  readonly store: Store["Type"]
  readonly scope: Scope.CloseableScope
}

const section = (dir: string, host: string, port: number, extra: Partial<ClusterConfigInput> = {}) => ({
  store: { sqlite: path.join(dir, "cluster.db") },
  host,
  listen: { host: "127.0.0.1", port },
  leaseMs: LEASE_MS,
  ...extra
})

const startNode = (dir: string, host: string, extra: Partial<ClusterConfigInput> = {}) =>
  Effect.gen(function*() {
    const port = yield* Effect.promise(freePort)
    const scope = yield* Scope.make()
    const layer = Cluster.layer(section(dir, host, port, extra)).pipe(
      Layer.provideMerge(Testing.layer({ model })),
      Layer.provide(NodeContext.layer)
    )
    const context = yield* Layer.buildWithScope(layer, scope)
    return {
      fleet: Context.get(context, FlottaTag),
      cluster: Context.get(context, Cluster.Cluster),
      store: Context.get(context, Store),
      scope
    } as Node
  })

/** Polls on the real clock until `check` holds (at most 30 s). */
const until = <A, E>(read: Effect.Effect<A, E>, check: (a: A) => boolean, what: string) =>
  Effect.gen(function*() {
    const end = Date.now() + 30_000
    while (Date.now() < end) {
      const value = yield* Effect.either(read)
      if (value._tag === "Right" && check(value.right)) return value.right
      yield* Effect.sleep("50 millis")
    }
    return assert.fail(`timed out waiting until ${what}`)
  })

/** Both nodes of a new cluster in `dir`, once each sees the other live. */
const twoNodes = (dir: string) =>
  Effect.gen(function*() {
    const a = yield* startNode(dir, "node-a")
    const b = yield* startNode(dir, "node-b")
    yield* until(a.cluster.hosts, (hosts) => hosts.filter((h) => h.live).length === 2, "both hosts are live")
    return { a, b }
  })

const hostsOf = (infos: ReadonlyArray<AgentInfo>) => Object.fromEntries(infos.map((i) => [i.name, i.host]))

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cluster-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("a cluster of two nodes", () => {
  it.scopedLive(
    "places agents, calls across hosts, lists and logs fleet-wide, and keeps names unique",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { a, b } = yield* twoNodes(dir)
        yield* until(
          Effect.zipRight(
            a.fleet.spawn("probe", {}),
            Effect.zipRight(a.fleet.close("probe"), Effect.succeed(true))
          ).pipe(Effect.orElseSucceed(() => false)),
          Boolean,
          "a's engine works"
        )

        const onB = yield* a.fleet.spawn("scout", { host: "node-b" })
        assert.strictEqual(onB.host, "node-b")
        const onA = yield* b.fleet.spawn("keeper", { host: "node-a" })
        assert.strictEqual(onA.host, "node-a")
        // Without a host: the live host with the fewest agents (a tie here, so either).
        const third = yield* a.fleet.spawn("third")
        assert.include(["node-a", "node-b"], third.host)

        assert.strictEqual(yield* a.fleet.ask("scout", "hello from a"), "echo: hello from a")
        assert.strictEqual(yield* b.fleet.ask("keeper", "hello from b"), "echo: hello from b")
        assert.strictEqual((yield* a.fleet.status("scout")).turns, 1)
        assert.strictEqual((yield* a.fleet.result("scout")).text, "echo: hello from a")

        const fromA = hostsOf(yield* a.fleet.list())
        const fromB = hostsOf(yield* b.fleet.list())
        assert.deepStrictEqual(fromA, fromB)
        assert.strictEqual(fromA["scout"], "node-b")
        assert.strictEqual(fromA["keeper"], "node-a")

        const taken = yield* Effect.flip(b.fleet.spawn("scout", { host: "node-a" }))
        assert.strictEqual(taken._tag, "AgentAlreadyExists")
        const nowhere = yield* Effect.flip(a.fleet.spawn("lost", { host: "node-z" }))
        assert.strictEqual(nowhere._tag, "HostUnavailable")
        assert.include(nowhere.message, "node-z")

        // The report log is the cluster's: one cursor, both hosts' entries, each naming its host.
        const log = yield* until(
          a.fleet.reports({ kinds: ["result"] }),
          (page) => page.entries.length === 2,
          "both results are in the cluster's log"
        )
        assert.deepStrictEqual(log.entries.map((e) => [e.agent, e.host]).sort(), [
          ["keeper", "node-a"],
          ["scout", "node-b"]
        ])

        // Async runs stay on the host that started them; the list spans both, and either host finds any outcome.
        yield* a.fleet.runAsync({ prompt: "errand on a", name: "errand-a" })
        yield* b.fleet.runAsync({ prompt: "errand on b", name: "errand-b" })
        assert.strictEqual((yield* a.fleet.awaitRun("errand-b")).kind, "run")
        const errandA = yield* b.fleet.runResult("errand-a")
        assert.strictEqual(errandA.kind === "run" ? errandA.text : "", "echo: errand on a")
        const runs = yield* until(
          a.fleet.runs({ state: "succeeded" }),
          (views) => views.length === 2,
          "both runs are listed as succeeded"
        )
        assert.deepStrictEqual(runs.map((r) => [r.name, r.host]).sort(), [["errand-a", "node-a"], [
          "errand-b",
          "node-b"
        ]])
        assert.strictEqual((yield* b.fleet.runs({ limit: 1 })).length, 1)
        assert.strictEqual((yield* Effect.flip(a.fleet.runResult("no-such-run")))._tag, "RunNotFound")

        // A name reserved for a spawn whose caller died before its host claimed it: close frees it.
        const store = Context.get(
          yield* Layer.build(ClusterStore.layer({ sqlite: path.join(dir, "cluster.db") })),
          ClusterStore
        )
        assert.isTrue(yield* store.place("orphan", "node-a", dir, {}))
        yield* b.fleet.close("orphan")
        assert.isTrue(Option.isNone(yield* store.placement("orphan")))

        yield* b.fleet.close("scout")
        const missing = yield* Effect.flip(a.fleet.ask("scout", "still there?"))
        assert.strictEqual(missing._tag, "AgentNotFound")
        // Closed, it is read back from the store of the host that ran it, through either host.
        assert.deepInclude(yield* a.fleet.info("scout"), { status: "closed", host: "node-b" })
        assert.deepStrictEqual((yield* a.fleet.transcript("scout")).map((t) => t.reply), ["echo: hello from a"])
        assert.strictEqual((yield* Effect.flip(a.fleet.info("never-seen")))._tag, "AgentNotFound")
        // The name is free again, anywhere; the live agent answers for it.
        assert.strictEqual((yield* a.fleet.spawn("scout", { host: "node-a" })).host, "node-a")
        assert.deepInclude(yield* b.fleet.info("scout"), { status: "idle", host: "node-a" })
        assert.deepStrictEqual(yield* b.fleet.transcript("scout"), [])

        yield* Scope.close(a.scope, Exit.void)
        yield* Scope.close(b.scope, Exit.void)
      }),
    90_000
  )

  it.scopedLive(
    "moves a lost host's agents to a live one, and its turn in flight ends with HostLost",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { a, b } = yield* twoNodes(dir)
        yield* b.fleet.spawn("mover", { host: "node-a" })
        yield* b.fleet.ask("mover", "before")
        const inFlight = yield* Effect.fork(b.fleet.ask("mover", "slow one"))
        yield* until(b.fleet.status("mover"), (s) => s.current !== null, "the slow turn runs on node-a")

        // Node a goes away: it renews no more, and b finds its lease lapsed.
        yield* Scope.close(a.scope, Exit.void)
        const lost = yield* Effect.flip(inFlight)
        assert.strictEqual(lost._tag, "HostLost")

        const moved = yield* until(b.fleet.info("mover"), (info) => info.host === "node-b", "mover is on node-b")
        assert.strictEqual(moved.status, "idle")
        assert.strictEqual(yield* b.fleet.ask("mover", "after"), "echo: after")
        const entry = yield* until(
          b.fleet.reports({ agent: "mover", kinds: ["moved"] }),
          (page) => page.entries.length === 1,
          "the move is in the log"
        )
        assert.deepInclude(entry.entries[0]!.data as object, { from: "node-a", to: "node-b" })
        // The loss itself, once, by the host that failed it over.
        const loss = yield* until(
          b.fleet.reports({ kinds: ["host_lost"] }),
          (page) => page.entries.length > 0,
          "the loss is in the log"
        )
        assert.deepStrictEqual(loss.entries.map((e) => [e.agent, e.host, e.data]), [[
          "cluster",
          "node-b",
          { host: "node-a", agents: ["mover"], by: "node-b" }
        ]])
        yield* Scope.close(b.scope, Exit.void)
      }),
    90_000
  )

  it.scopedLive(
    "an agent spawned on another host keeps every option through its host's loss: the moved agent has them all",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { a, b } = yield* twoNodes(dir)
        // Every data option set (resume aside: a move resumes the agent's own session), each unlike its default.
        const given = {
          cwd: dir,
          model: "opus",
          permission: { allow: ["Read"], ask: ["Write"] },
          systemPrompt: "be brief",
          appendSystemPrompt: "and exact",
          timeout: 42_000,
          env: { TEAM: "a" },
          role: "manager",
          extraArgs: ["--verbose"],
          lifecycle: "session",
          expectStructuredOutput: true,
          sandbox: { network: { allow: ["github.com"] } },
          autoCompactAt: 80,
          stream: true,
          maxBudgetUsd: 2.5,
          budgetPer: "day",
          labels: { team: "a", routine: "nightly" }
        } satisfies AgentOptions
        assert.deepStrictEqual(
          [...Object.keys(given), "resume"].sort(),
          Object.keys(Options.AgentOptions.fields).sort(),
          "the test sets every option of the Schema"
        )
        yield* b.fleet.spawn("keeper", { ...given, host: "node-a" })
        assert.strictEqual((yield* b.fleet.info("keeper")).host, "node-a")

        yield* Scope.close(a.scope, Exit.void)
        const moved = yield* until(b.fleet.info("keeper"), (info) => info.host === "node-b", "keeper is on node-b")
        assert.deepInclude(moved, {
          model: "opus",
          role: "manager",
          permission: given.permission,
          labels: given.labels
        })
        const row = Option.getOrThrow(yield* b.store.agent("keeper"))
        const { cwd: _cwd, lifecycle, permission, timeout, ...kept } = given
        assert.strictEqual(row.lifecycle, lifecycle)
        assert.deepStrictEqual(row.options, {
          ...kept,
          cwd: path.resolve(dir),
          permission,
          timeoutMs: timeout
        })
        yield* Scope.close(b.scope, Exit.void)
      }),
    90_000
  )

  it.scopedLive(
    "with a third node: a lost host is reported once, by the live host that claims the loss, naming its agents",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { a, b } = yield* twoNodes(dir)
        const c = yield* startNode(dir, "node-c")
        yield* until(a.cluster.hosts, (hosts) => hosts.filter((h) => h.live).length === 3, "three hosts are live")
        for (const name of ["one", "two", "three"]) yield* b.fleet.spawn(name, { host: "node-a" })

        yield* Scope.close(a.scope, Exit.void)
        yield* until(
          b.fleet.list(),
          (infos) => ["one", "two", "three"].every((n) => ["node-b", "node-c"].includes(hostsOf(infos)[n] ?? "")),
          "node-a's agents are on node-b and node-c"
        )
        const lost = yield* until(
          c.fleet.reports({ kinds: ["host_lost"] }),
          (page) => page.entries.length > 0,
          "the loss is in the log"
        )
        // Both live hosts tend every quarter lease: neither reports the loss again, nor does the other one.
        yield* Effect.sleep(`${LEASE_MS} millis`)
        const entries = (yield* b.fleet.reports({ kinds: ["host_lost"] })).entries
        assert.lengthOf(entries, 1, JSON.stringify(entries))
        const [entry] = lost.entries
        const data = entry!.data as { host: string; agents: Array<string>; by: string }
        assert.strictEqual(entry!.agent, "cluster")
        assert.strictEqual(data.host, "node-a")
        assert.oneOf(data.by, ["node-b", "node-c"])
        assert.strictEqual(entry!.host, data.by, "written by the host that claimed the loss")
        assert.deepStrictEqual([...data.agents].sort(), ["one", "three", "two"])
        yield* Scope.close(b.scope, Exit.void)
        yield* Scope.close(c.scope, Exit.void)
      }),
    90_000
  )

  it.scopedLive(
    "a session's life from the other host: hibernate, wake, compact, clear, and autoCompactAt over the wire",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { a, b } = yield* twoNodes(dir)
        // Driven from a, living on b.
        yield* a.fleet.spawn("sleeper", { host: "node-b" })
        yield* a.fleet.ask("sleeper", "remember the pelican")
        assert.isTrue(yield* a.fleet.hibernate("sleeper"))
        assert.deepInclude(yield* a.fleet.info("sleeper"), { status: "hibernated", host: "node-b", pid: null })
        assert.deepInclude(yield* b.fleet.info("sleeper"), { status: "hibernated" })
        assert.isTrue(yield* a.fleet.wake("sleeper"))
        assert.strictEqual((yield* a.fleet.info("sleeper")).status, "idle")
        const kinds = yield* until(
          a.fleet.reports({ agent: "sleeper", kinds: ["hibernated", "woken"] }),
          (page) => page.entries.length === 2,
          "the sleep and the wake are in the cluster's log"
        )
        assert.deepStrictEqual(kinds.entries.map((e) => [e.kind, e.host]), [["hibernated", "node-b"], [
          "woken",
          "node-b"
        ]])

        const compacted = yield* a.fleet.wait("sleeper", yield* a.fleet.compact("sleeper", "keep the bird"))
        assert.strictEqual(compacted.compaction?.trigger, "manual")
        assert.strictEqual((yield* a.fleet.info("sleeper")).context?.tokens, compacted.compaction?.postTokens)
        const before = (yield* a.fleet.info("sleeper")).sessionId
        yield* a.fleet.wait("sleeper", yield* a.fleet.clear("sleeper"))
        assert.notStrictEqual((yield* a.fleet.info("sleeper")).sessionId, before, "a new conversation")

        // autoCompactAt crosses with the spawn: 0.1% of the window is passed by the first long turn.
        yield* a.fleet.spawn("filler", { host: "node-b", autoCompactAt: 0.1 })
        yield* a.fleet.ask("filler", "x".repeat(2000))
        yield* a.fleet.ask("filler", "next")
        const queued = yield* until(
          a.fleet.reports({ agent: "filler", kinds: ["compaction_queued", "compacted"] }),
          (page) => page.entries.length === 2,
          "the queued compaction ran on node-b"
        )
        assert.deepStrictEqual(queued.entries.map((e) => e.kind), ["compaction_queued", "compacted"])
        yield* Scope.close(a.scope, Exit.void)
        yield* Scope.close(b.scope, Exit.void)
      }),
    90_000
  )

  it.scopedLive("refuses a node whose shards per group differ from the cluster's", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const a = yield* startNode(dir, "node-a")
      const refused = yield* Effect.flip(startNode(dir, "node-b", { shardsPerGroup: 32 }))
      assert.strictEqual(refused._tag, "ClusterConfigError")
      assert.include(refused.message, "cluster.shardsPerGroup")
      yield* Scope.close(a.scope, Exit.void)
    }), 60_000)
})
