/**
 * Human approvals end to end, against the real pinned `claude` binary and the built-in simulator (whose
 * `WRITE <path> <text>` makes the model call Write, and which answers a denied call with `DENIED: <what the tool
 * result said>`, so the reply shows what the model saw):
 * - a `flotta serve --simulate` whose agent has `permission: { allow: ["Read"], ask: ["Write"] }`, driven over
 *   MCP (spawn with ask, prompt, flotta_approvals, waiting_approval, flotta_decide allow: the file exists) and
 *   through the command (`flotta approvals`, `flotta deny ID --message`, `flotta approve ID --always`);
 * - a serve with a short `approvalTimeout`: the Write expires as a deny, and `flotta approve` on it afterwards is
 *   ApprovalExpired with exit code 12;
 * - the library with no serve: the Promise API's `onApproval` and `decide`, and a child killed with SIGKILL while
 *   its approval waits (the approval ends expired, decided by "crashed", and the agent comes back);
 * - `flotta run --ask Write` on a pseudo-terminal (util-linux `script`): the question, a bad answer, yes and no;
 *   and refused up front without a terminal.
 */
import { NodeContext } from "@effect/platform-node"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { CallToolResult } from "@modelcontextprotocol/client"
import { Effect, Exit, Layer } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Approval } from "../packages/core/src/Approvals.js"
import { createFleet } from "../packages/core/src/Client.js"
import * as Flotta from "../packages/core/src/Flotta.js"
import { FLOTTA, runFlotta } from "./support/cli.js"
import { CLAUDE, isAlive, useOfflineApi } from "./support/realCli.js"
import { startServe } from "./support/serve.js"
import { eventually, waitFor } from "./support/waiting.js"

const offline = useOfflineApi("flotta-approvals")

const GUARDED = { allow: ["Read"], ask: ["Write"] }

/** An approval as the tools answer it (JSON: the core's own shape). */
type ApprovalOut = Approval

/** A project with a config whose one session asks before each Write, served by `flotta serve --simulate`. */
const serveProject = async (name: string, extra: Record<string, unknown> = {}) => {
  const served = await startServe(offline.workdir(name), {
    config: { agents: [{ name: "guarded", permission: GUARDED }], ...extra },
    timeout: 60_000
  })
  // The test's own view of the serve, for waiting on conditions without a Node start-up per look.
  const client = await served.client()
  const call = async <A = Record<string, unknown>>(name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args }) as CallToolResult
    assert.notStrictEqual(result.isError, true, `${name}: ${JSON.stringify(result.content)}`)
    return result.structuredContent as A
  }
  return { ...served, call }
}

type Served = Awaited<ReturnType<typeof serveProject>>

/** The agent's pending approvals, once there is one. */
const pendingOf = (served: Served, agent: string) =>
  eventually(
    () => served.call<{ approvals: Array<ApprovalOut> }>("flotta_approvals", { agent }),
    (v) => v.approvals.length > 0,
    60_000,
    `a Write of ${agent} to ask`
  ).then((v) => v.approvals)

/** `flotta approvals --json` in the project: the list. */
const listed = async (project: string, args: ReadonlyArray<string> = []) => {
  const ran = await runFlotta(project, ["approvals", "--json", ...args])
  assert.strictEqual(ran.code, 0, ran.stderr)
  return (JSON.parse(ran.stdout) as { approvals: Array<ApprovalOut> }).approvals
}

/** Waits until the turn is done, then `flotta result` prints its reply. */
const replyOf = async (served: Served, agent: string, turnId: string) => {
  await eventually(
    () => served.call<{ done: boolean }>("flotta_wait", { name: agent, turnId, timeoutSeconds: 45 }),
    (v) => v.done,
    120_000,
    `the reply to ${turnId}`
  )
  const ran = await runFlotta(served.project, ["result", agent, turnId])
  assert.strictEqual(ran.code, 0, ran.stderr)
  return ran.stdout.trim()
}

describe("approvals through flotta serve, with the real claude CLI", () => {
  let served: Served
  beforeAll(async () => {
    served = await serveProject("served")
  })
  afterAll(async () => {
    if (served !== undefined) await served.stop()
  })

  it("over MCP: a spawned agent's Write waits, is listed, and flotta_decide allow writes the file", async () => {
    const { call } = served
    const cwd = offline.workdir("over-mcp")
    const target = path.join(cwd, "approved.txt")
    const spawned = await call<{ status: string; permission: unknown }>("flotta_spawn", {
      name: "writer",
      cwd,
      permission: GUARDED
    })
    assert.strictEqual(spawned.status, "idle")
    assert.deepStrictEqual(spawned.permission, GUARDED)
    const { turnId } = await call<{ turnId: string }>("flotta_prompt", {
      name: "writer",
      text: `WRITE ${target} written with a human's blessing`
    })
    const [pending] = await pendingOf(served, "writer")
    assert.deepInclude(pending!, { agent: "writer", turnId, tool: "Write", status: "pending" })
    assert.strictEqual(pending!.input["file_path"], target)
    assert.strictEqual(
      (await call<{ status: string }>("flotta_status", { name: "writer" })).status,
      "waiting_approval"
    )
    const agents = (await call<{ agents: Array<{ name: string; status: string }> }>("flotta_list", {})).agents
    assert.strictEqual(agents.find((a) => a.name === "writer")?.status, "waiting_approval")
    assert.isFalse(fs.existsSync(target), "nothing is written before the decision")

    const decided = await call<ApprovalOut>("flotta_decide", { id: pending!.id, behavior: "allow" })
    assert.deepInclude(decided, { id: pending!.id, status: "allowed", decidedBy: "mcp" })
    const waited = await call<{ done: boolean; result?: { text: string } }>("flotta_wait", {
      name: "writer",
      turnId,
      timeoutSeconds: 45
    })
    assert.isTrue(waited.done)
    assert.strictEqual(waited.result?.text, `WROTE ${target}`)
    assert.strictEqual(fs.readFileSync(target, "utf8"), "written with a human's blessing\n")
    assert.strictEqual((await call<{ status: string }>("flotta_status", { name: "writer" })).status, "idle")
    const transcript = await call<{ turns: Array<{ permissions: Array<Record<string, unknown>> }> }>(
      "flotta_transcript",
      { name: "writer" }
    )
    assert.deepInclude(transcript.turns[0]!.permissions[0]!, { tool: "Write", decision: "allow", by: "mcp" })
  }, 180_000)

  it("through the command: flotta approvals lists it; deny leaves no file and the model sees the message", async () => {
    const { project } = served // the session's cwd: the serve's
    const target = path.join(project, "denied.txt")
    const prompted = await runFlotta(project, ["prompt", "guarded", `WRITE ${target} should never land`])
    assert.strictEqual(prompted.code, 0, prompted.stderr)
    const turnId = prompted.stdout.trim()
    await pendingOf(served, "guarded")
    const [pending] = await listed(project)
    assert.deepInclude(pending!, { agent: "guarded", turnId, tool: "Write" })

    const table = await runFlotta(project, ["approvals"])
    assert.strictEqual(table.code, 0, table.stderr)
    const [header, row] = table.stdout.trim().split("\n")
    assert.match(header!, /^ID\s+AGENT\s+TOOL\s+INPUT\s+LEFT$/)
    assert.match(
      row!,
      new RegExp(
        `^${pending!.id}\\s+guarded\\s+Write\\s+\\{file_path: "/.*\\s+1[45]m \\d+s left$`
      )
    )
    const status = await runFlotta(project, ["status", "guarded"])
    assert.match(status.stdout, /^guarded: waiting_approval \(turn t\d+\)/)

    const denied = await runFlotta(project, ["deny", pending!.id, "--message", "not on a Friday"])
    assert.strictEqual(denied.code, 0, denied.stderr)
    assert.match(
      denied.stdout,
      new RegExp(
        `^denied ${pending!.id}: Write \\{file_path: ".*denied\\.txt", .*\\} for guarded \\(not on a Friday\\)`
      )
    )
    assert.match(await replyOf(served, "guarded", turnId), /^DENIED: .*A human denied this tool call: not on a Friday/)
    assert.isFalse(fs.existsSync(target))
    const [ended] = await listed(project, ["--all", "--agent", "guarded"])
    assert.deepInclude(ended!, { id: pending!.id, status: "denied", decidedBy: "cli", message: "not on a Friday" })

    // Approved with --always: this Write lands, and the next one needs nobody.
    const first = path.join(project, "first.txt")
    const again = (await runFlotta(project, ["prompt", "guarded", `WRITE ${first} one`])).stdout.trim()
    const [next] = await pendingOf(served, "guarded")
    const approved = await runFlotta(project, ["approve", next!.id, "--always"])
    assert.strictEqual(approved.code, 0, approved.stderr)
    assert.include(approved.stdout, "Write is allowed for guarded from now on")
    assert.strictEqual(await replyOf(served, "guarded", again), `WROTE ${first}`)
    const second = path.join(project, "second.txt")
    const unasked = (await runFlotta(project, ["prompt", "guarded", `WRITE ${second} two`])).stdout.trim()
    assert.strictEqual(await replyOf(served, "guarded", unasked), `WROTE ${second}`)
    assert.deepStrictEqual(await listed(project), [])
    assert.strictEqual(fs.readFileSync(second, "utf8"), "two\n")

    const unknown = await runFlotta(project, ["approve", "ap_nosuchthing"])
    assert.strictEqual(unknown.code, 12)
    assert.match(
      unknown.stderr,
      /^flotta: ApprovalNotFound: no approval has the id "ap_nosuchthing" \(no approval is pending\)\. `flotta approvals` lists the pending ones\.\n$/
    )
  }, 240_000)
})

describe("an approval nobody decides, with the real claude CLI", () => {
  it("expires after approvalTimeout as a deny; approving it afterwards is ApprovalExpired, exit 12", async () => {
    const served = await serveProject("expiring", { approvalTimeout: 3000 })
    try {
      const { project } = served
      const target = path.join(project, "late.txt")
      const prompted = await runFlotta(project, ["prompt", "guarded", `WRITE ${target} too late`])
      assert.strictEqual(prompted.code, 0, prompted.stderr)
      const reply = await replyOf(served, "guarded", prompted.stdout.trim())
      assert.match(reply, /^DENIED: .*Nobody approved this Write call in time \(no decision within 3s\)/)
      assert.isFalse(fs.existsSync(target))
      const [ended] = await listed(project, ["--all"])
      assert.deepInclude(ended!, { tool: "Write", status: "expired", decidedBy: "timeout" })
      const table = await runFlotta(project, ["approvals", "--all"])
      assert.match(table.stdout, new RegExp(`${ended!.id}\\s+guarded\\s+Write\\s+.*expired \\(timeout\\)`))

      const late = await runFlotta(project, ["approve", ended!.id])
      assert.strictEqual(late.code, 12)
      assert.match(
        late.stderr,
        new RegExp(
          `^flotta: ApprovalExpired: approval ${ended!.id} \\(Write for guarded\\) is no longer pending: it expired ` +
            "at .* \\(no decision within 3s\\)\\. `flotta approvals --all` shows how it ended\\.\\n$"
        )
      )
    } finally {
      await served.stop()
    }
  }, 180_000)
})

describe("approvals through the library, with the real claude CLI", () => {
  it("the Promise API: onApproval hears the Write, decide allows it, the file lands", async () => {
    const fleet = createFleet({ claudePath: CLAUDE })
    try {
      const heard: Array<Approval | unknown> = []
      const unsubscribe = fleet.onApproval((approval) => {
        heard.push(approval)
        fleet.decide(approval.id, { behavior: "allow", by: "test" }).catch((e) => heard.push(e))
      })
      await unsubscribe.ready
      const cwd = offline.workdir("promise-api")
      const target = path.join(cwd, "promised.txt")
      await fleet.spawn("promised", { cwd, env: offline.env, permission: GUARDED })
      const result = await fleet.askResult("promised", `WRITE ${target} from a callback`)
      assert.strictEqual(result.text, `WROTE ${target}`)
      assert.strictEqual(fs.readFileSync(target, "utf8"), "from a callback\n")
      assert.deepStrictEqual(
        (heard as Array<Approval>).map((a) => [a.agent, a.tool, a.input["file_path"]]),
        [["promised", "Write", target]]
      )
      const [ended] = await fleet.approvals({ all: true })
      assert.deepInclude(ended!, { status: "allowed", decidedBy: "test" })
      unsubscribe()
    } finally {
      await fleet.shutdown()
    }
  }, 120_000)

  it.scopedLive(
    "a child killed while its approval waits: expired by \"crashed\", and the agent restarts",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const cwd = offline.workdir("crashing")
        const target = path.join(cwd, "never.txt")
        const info = yield* fleet.spawn("crashing", { cwd, env: offline.env, permission: GUARDED })
        const turnId = yield* fleet.prompt("crashing", `WRITE ${target} never`)
        const [pending] = yield* waitFor(
          fleet.approvals({ agent: "crashing" }),
          (l) => l.length > 0,
          "the Write to ask"
        )
        assert.strictEqual((yield* fleet.status("crashing")).status, "waiting_approval")
        process.kill(info.pid!, "SIGKILL")

        const turn = yield* Effect.exit(fleet.wait("crashing", turnId))
        assert.isTrue(Exit.isFailure(turn))
        assert.strictEqual(
          Exit.isFailure(turn) && turn.cause._tag === "Fail" ? turn.cause.error._tag : "",
          "AgentCrashed"
        )
        // The turn fails first; its approval ends as the supervisor takes the dead process down.
        const [ended] = yield* waitFor(
          fleet.approvals({ all: true }),
          (list) => list[0]?.status !== "pending",
          "the approval to end"
        )
        assert.deepInclude(ended!, { id: pending!.id, status: "expired", decidedBy: "crashed" })
        const kinds = (yield* fleet.reports({ agent: "crashing", kinds: ["approval_decided"] })).entries
        assert.deepInclude(kinds[0]!.data as object, { id: pending!.id, behavior: "deny", by: "crashed" })

        // The turn queued now runs once the restarted process is up (however long a loaded machine takes).
        assert.strictEqual(
          yield* fleet.ask("crashing", "ECHO back again", { timeout: "200 seconds" }),
          "ECHO: back again"
        )
        const back = yield* fleet.info("crashing")
        assert.isAtLeast(back.restarts, 1)
        assert.notStrictEqual(back.pid, info.pid)
        assert.isTrue(isAlive(back.pid!))
        assert.isFalse(fs.existsSync(target))
      }).pipe(Effect.provide(Flotta.layer({ claudePath: CLAUDE }).pipe(Layer.provide(NodeContext.layer)))),
    240_000
  )
})

/** `flotta run ...` on a pseudo-terminal, fed the answers as the questions come; what it printed, and its code. */
const onTerminal = (cwd: string, args: string, answers: ReadonlyArray<string>) =>
  new Promise<{ screen: string; code: number | null }>((resolve, reject) => {
    const command = `${process.execPath} ${FLOTTA} ${args}`
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      cwd,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let screen = ""
    let asked = 0
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000)
    child.stdout.on("data", (d) => {
      screen += d
      const questions = screen.split("[y]es / [n]o / [a]lways").length - 1
      while (asked < questions && asked < answers.length) child.stdin.write(`${answers[asked++]}\r`)
    })
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ screen, code })
    })
  })

describe("flotta run --ask on a terminal, with the real claude CLI", () => {
  it("puts the Write to the person: a bad answer is asked again, yes writes, no and Ctrl-C leave no file", async () => {
    const cwd = offline.workdir("terminal")
    const yes = path.join(cwd, "yes.txt")
    const allowed = await onTerminal(cwd, `run --simulate --ask Write 'WRITE ${yes} typed yes'`, ["maybe", "y"])
    assert.strictEqual(allowed.code, 0, allowed.screen)
    assert.match(allowed.screen, /flotta: run-[0-9a-f]+ asks to use Write \(ap_\w+, 1[45]m \d+s left to answer\)/)
    assert.include(
      allowed.screen,
      `Allow Write {file_path: "${yes}", content: "typed yes\\n"}? [y]es / [n]o / [a]lways`
    )
    assert.include(allowed.screen, "flotta: answer y (yes), n (no) or a (always)")
    assert.match(allowed.screen, /flotta: allowed ap_\w+: Write/)
    assert.include(allowed.screen, `WROTE ${yes}`)
    assert.strictEqual(fs.readFileSync(yes, "utf8"), "typed yes\n")

    const no = path.join(cwd, "no.txt")
    const denied = await onTerminal(cwd, `run --simulate --permission ask 'WRITE ${no} typed no'`, ["n"])
    assert.strictEqual(denied.code, 0, denied.screen)
    assert.match(denied.screen, /flotta: denied ap_\w+: Write/)
    assert.match(denied.screen, /DENIED: .*A human denied this tool call/)
    assert.isFalse(fs.existsSync(no))

    // Ctrl-C at the question stops the command as anywhere else (130), and nothing is written.
    const stopped = path.join(cwd, "stopped.txt")
    const interrupted = await onTerminal(cwd, `run --simulate --ask Write 'WRITE ${stopped} never'`, ["\x03"])
    assert.strictEqual(interrupted.code, 130, interrupted.screen)
    assert.isFalse(fs.existsSync(stopped))
  }, 240_000)

  it("without a terminal, --ask is refused before anything starts", async () => {
    const ran = await runFlotta(offline.workdir("no-terminal"), ["run", "--simulate", "--ask", "Write", "WRITE x y"])
    assert.strictEqual(ran.code, 2)
    assert.match(
      ran.stderr,
      /^flotta: --ask: a tool under ask waits for your answer at this terminal, and stdin is not one/
    )
    assert.notInclude(ran.stderr, "simulating", "nothing started")
  })
})
