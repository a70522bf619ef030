/**
 * `flotta serve`, the client commands, `flotta mcp` and `flotta repl`, each driven as a user (or an MCP client)
 * would: the compiled binary as a child process, the real claude CLI, the built-in simulator.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { FLOTTA, ROOT, runFlotta, runFlottaAll, startFlotta, stopFlotta } from "./support/cli.js"
import { freePort, isAlive, waitUntil } from "./support/realCli.js"
import { startServe } from "./support/serve.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-serve-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const start = startFlotta
const stop = stopFlotta

describe("flotta serve and the client commands", () => {
  it("serves the configured fleet over MCP, answers client commands, and stops cleanly on SIGTERM", async () => {
    const project = path.join(dir, "served")
    fs.mkdirSync(project)
    const port = await freePort()
    fs.writeFileSync(
      path.join(project, "flotta.config.json"),
      `// comments are fine\n${JSON.stringify({ agents: [{ name: "scout" }], mcp: { port } })}\n`
    )
    const { child, out } = await startServe(project, { timeout: 60_000 })
    try {
      assert.include(out.stderr, `MCP at http://127.0.0.1:${port}/mcp`)
      assert.include(out.stderr, "1 agent(s) up (scout)")

      const listed = await runFlotta(project, ["list", "--json"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      const agents = JSON.parse(listed.stdout).agents as Array<{ name: string; pid: number }>
      assert.deepStrictEqual(agents.map((a) => a.name), ["scout"])
      const scoutPid = agents[0]!.pid

      const asked = await runFlotta(project, ["ask", "scout", "ECHO over the wire"])
      assert.strictEqual(asked.code, 0, asked.stderr)
      assert.strictEqual(asked.stdout, "ECHO: over the wire\n")

      const prompted = await runFlotta(project, ["prompt", "scout", "SLOW 300 queued"])
      assert.strictEqual(prompted.code, 0, prompted.stderr)
      const turnId = prompted.stdout.trim()
      assert.match(turnId, /^t\d+$/)
      let result = await runFlotta(project, ["result", "scout", turnId])
      for (let i = 0; i < 50 && result.code !== 0; i++) result = await runFlotta(project, ["result", "scout", turnId])
      assert.strictEqual(result.stdout, "SLOW DONE queued\n")

      const status = await runFlotta(project, ["status", "scout"])
      assert.match(status.stdout, /^scout: idle, 0 queued, 2 turns/)

      const reports = await runFlotta(project, ["reports", "--agent", "scout"])
      assert.deepStrictEqual(
        reports.stdout.trim().split("\n").map((l) => l.trim().split(/\s+/)[3]),
        ["spawned", "turn_started", "result", "turn_started", "result"]
      )

      const unknown = await runFlotta(project, ["ask", "ghost", "hello"])
      assert.strictEqual(unknown.code, 12)
      assert.match(unknown.stderr, /AgentNotFound: no agent named "ghost" \(live agents: scout\)/)

      child.kill("SIGTERM")
      await waitUntil(() => out.exited, 20_000, "serve to stop on SIGTERM")
      assert.strictEqual(out.exit, 0, out.stderr)
      await waitUntil(() => !isAlive(scoutPid), 10_000, "the agent's claude process to exit")
      const after = await runFlotta(project, ["list"])
      assert.strictEqual(after.code, 12)
      assert.match(after.stderr, /no flotta server answered/)
    } finally {
      await stop(child, out)
    }
  })

  it("refuses a missing or wrong token when one is configured", async () => {
    const project = path.join(dir, "guarded")
    fs.mkdirSync(project)
    const port = await freePort()
    const token = "a-long-enough-secret-token"
    fs.writeFileSync(path.join(project, "flotta.config.json"), JSON.stringify({ mcp: { port, token } }))
    const { child, out } = await startServe(project, { timeout: 60_000 })
    try {
      const withToken = await runFlotta(project, ["list"]) // the config's token
      assert.strictEqual(withToken.code, 0, withToken.stderr)
      const url = `http://127.0.0.1:${port}/mcp`
      const wrong = await runFlotta(project, ["list", "--token", "wrong-token-wrong-token"])
      assert.strictEqual(wrong.code, 17, wrong.stderr)
      assert.strictEqual(
        wrong.stderr,
        `flotta: Unauthorized: the flotta server at ${url} refused the token (HTTP 401: Unauthorized: send ` +
          "Authorization: Bearer <token>): check --token, FLOTTA_MCP_TOKEN or the config's mcp.token\n"
      )
      assert.notInclude(wrong.stderr, "wrong-token", "the token is never printed")
      // No config here, so no token is sent at all.
      const elsewhere = path.join(dir, "guarded-elsewhere")
      fs.mkdirSync(elsewhere)
      const none = await runFlotta(elsewhere, ["status", "scout", "--url", url])
      assert.strictEqual(none.code, 17, none.stderr)
      assert.include(none.stderr, `Unauthorized: the flotta server at ${url} needs a token, and none was sent`)
      // reports would read the store when no serve answers; this one answered.
      const reports = await runFlotta(project, ["reports", "--token", "wrong-token-wrong-token"])
      assert.strictEqual(reports.code, 17, reports.stderr)
      assert.notInclude(reports.stderr, "reading the store")
    } finally {
      await stop(child, out)
    }
    // Once the serve has stopped, nothing answers: that is no refusal.
    const gone = await runFlotta(project, ["list"])
    assert.strictEqual(gone.code, 12, gone.stderr)
    assert.match(gone.stderr, /^flotta: ServerUnreachable: no flotta server answered at http:\/\/127\.0\.0\.1:\d+\/mcp/)
  })

  it("names a refusal by any server at the URL (401 or 403) Unauthorized, not unreachable", async () => {
    const refusing = http.createServer((request, response) => {
      const status = request.headers["authorization"] === undefined ? 401 : 403
      request.resume()
      response.writeHead(status, { "content-type": "text/plain" }).end("go away")
    })
    await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", resolve))
    const { port } = refusing.address() as AddressInfo
    const url = `http://127.0.0.1:${port}/mcp`
    try {
      const [none, wrong] = await runFlottaAll(dir, [
        ["list", "--url", url],
        ["list", "--url", url, "--token", "some-token-or-other"]
      ])
      assert.strictEqual(none!.code, 17, none!.stderr)
      assert.include(
        none!.stderr,
        `the flotta server at ${url} needs a token, and none was sent (HTTP 401: Unauthorized)`
      )
      assert.strictEqual(wrong!.code, 17, wrong!.stderr)
      assert.include(wrong!.stderr, `the flotta server at ${url} refused the token (HTTP 403: Forbidden)`)
    } finally {
      await new Promise((resolve) => refusing.close(resolve))
    }
  })
})

describe("a config with mistakes", () => {
  const SECRET = "0123456789abcdef-github"
  /** Each mistake a person makes in an entry, and the line that names it. */
  const SKIPPED = [
    "agents[1].permision: unknown field; did you mean \"permission\"?",
    "agents[2].permission: expected \"read_only\", \"full\", \"ask\" or { allow, ask? }, got \"readonly\"",
    "agents[3].name: duplicate name \"scout\" (agents[0] has it already)",
    "routines[0].template: no run template named \"runer\" in agents; did you mean \"runner\"?",
    "routines[1].agent: \"runner\" is a run template; this needs a session (an agent entry with lifecycle: " +
    "\"session\")",
    "github.on[0].routine: the routine \"fix-ci\" is skipped itself (routines[0] is invalid)"
  ]
  const config = (port: number) => ({
    store: "memory",
    agents: [
      { name: "scout" },
      { name: "helper", permision: "read_only" },
      { name: "scribe", permission: "readonly" },
      { name: "scout", model: "haiku" },
      { name: "runner", lifecycle: "run", worktree: true, permission: "full" }
    ],
    mcp: { port },
    schedule: { timezone: "utc", hours: {} },
    routines: [
      { name: "fix-ci", action: "run", template: "runer" },
      { name: "check-in", action: "prompt", agent: "runner", prompt: "status?" },
      { name: "nightly", action: "scan", every: { dailyAt: "02:00" } }
    ],
    github: {
      secret: SECRET,
      on: [
        { event: "check_run.completed", conclusion: "failure", routine: "fix-ci" },
        { event: "issues.labeled", label: "flotta", run: "runner" }
      ]
    }
  })

  it("doctor lists every mistake with its path and fails with exit code 3", async () => {
    const project = path.join(dir, "mistaken-doctor")
    fs.mkdirSync(project)
    const file = path.join(project, "flotta.config.json")
    fs.writeFileSync(file, JSON.stringify(config(await freePort())))
    const doctor = await runFlotta(project, ["doctor"])
    assert.strictEqual(doctor.code, 3, doctor.stderr)
    assert.include(doctor.stdout, `FAIL  config: ${file}: 1 session(s), 1 run template(s); 6 problems`)
    for (const line of SKIPPED) assert.include(doctor.stdout, `FAIL  config: ${line} (skipped)`)
    assert.include(doctor.stderr, `ConfigFileError: ${file}: 6 problems (listed above)`)
    // The checks after the config's still run: doctor lists every problem it finds.
    assert.include(doctor.stdout, "store: memory")

    const json = await runFlotta(project, ["doctor", "--json"])
    assert.strictEqual(json.code, 3)
    const report = JSON.parse(json.stdout) as { ok: boolean; checks: Array<{ level: string; text: string }> }
    assert.isFalse(report.ok)
    assert.includeMembers(report.checks.filter((c) => c.level === "fail").map((c) => `${c.text}`), [
      `${SKIPPED[0]} (skipped)`,
      `${SKIPPED[5]} (skipped)`
    ])

    // Fixed, it passes the config's check.
    fs.writeFileSync(file, JSON.stringify({ store: "memory", agents: [{ name: "scout" }] }))
    const fixed = await runFlotta(project, ["doctor"])
    assert.include(fixed.stdout, `ok    config: ${file}: 1 session(s), 0 run template(s)`)
    assert.notInclude(fixed.stdout, "skipped")
  })

  it("serve prints each skipped entry with its reason, and boots the rest", async () => {
    const project = path.join(dir, "mistaken-serve")
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, "flotta.config.json"), JSON.stringify(config(await freePort())))
    const { child, out } = await startServe(project, { args: ["--simulate", "--json"], timeout: 60_000 })
    try {
      for (const line of SKIPPED) assert.include(out.stderr, `flotta: skipped ${line}\n`)
      // Said once, not again by the engine's or the scheduler's own warnings.
      assert.notInclude(out.stderr, "config entry skipped")
      assert.notInclude(out.stderr, "routine skipped")
      assert.include(out.stderr, "1 agent(s) up (scout)")
      assert.include(out.stderr, "scheduler on")
      await waitUntil(() => out.stdout.includes("\n"), 10_000, "the ready line")
      const ready = JSON.parse(out.stdout.split("\n")[0]!) as {
        agents: Array<string>
        templates: Array<string>
        skipped: Array<{ path: string; message: string }>
      }
      assert.deepStrictEqual(ready.agents, ["scout"])
      assert.deepStrictEqual(ready.templates, ["runner"])
      assert.deepStrictEqual(ready.skipped.map((s) => `${s.path}: ${s.message}`), SKIPPED)

      // The rest works: the valid routine is scheduled, the skipped ones are shown as skipped.
      const status = await runFlotta(project, ["schedule", "status"])
      assert.strictEqual(status.code, 0, status.stderr)
      assert.include(status.stdout, "nightly")
      assert.include(status.stdout, `skipped routine: ${SKIPPED[3]}`)
    } finally {
      await stop(child, out)
    }
  })
})

describe("flotta mcp", () => {
  it("serves the tools over stdio to the SDK client, with nothing but protocol on stdout", async () => {
    const stderr: Array<string> = []
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [FLOTTA, "mcp", "--simulate"],
      cwd: dir,
      stderr: "pipe"
    })
    transport.stderr?.on("data", (d) => stderr.push(String(d)))
    const client = new Client({ name: "cli-test", version: "0.0.0" })
    await client.connect(transport)
    try {
      const { tools } = await client.listTools()
      assert.includeMembers(tools.map((t) => t.name), ["flotta_spawn", "flotta_ask", "flotta_wait", "flotta_close"])
      const spawned = await client.callTool({ name: "flotta_spawn", arguments: { name: "stdio-agent" } })
      assert.notStrictEqual(spawned.isError, true, JSON.stringify(spawned.content))
      const asked = await client.callTool({
        name: "flotta_ask",
        arguments: { name: "stdio-agent", text: "ECHO through stdio" }
      })
      const answer = asked.structuredContent as { done: boolean; result: { text: string } }
      assert.isTrue(answer.done)
      assert.strictEqual(answer.result.text, "ECHO: through stdio")
      assert.include(stderr.join(""), "simulating")
    } finally {
      await client.close()
    }
  })
})

describe("flotta repl", () => {
  it("gives a live fleet with top-level await, driven through stdin", async () => {
    const project = path.join(dir, "repl")
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, "flotta.config.json"), JSON.stringify({ agents: [{ name: "booted" }] }))
    const { child, out } = start(["repl", "--simulate"], project)
    const prompts = () => (out.stdout.match(/flotta> /g) ?? []).length
    try {
      await waitUntil(() => prompts() >= 1, 60_000, "the REPL prompt")
      const lines = [
        "await fleet.spawn(\"typed\")",
        "await fleet.ask(\"typed\", \"ECHO from the repl\")",
        "(await fleet.list()).map((a) => a.name).sort().join(\",\")"
      ]
      for (const [i, line] of lines.entries()) {
        child.stdin!.write(line + "\n")
        await waitUntil(() => prompts() >= i + 2, 60_000, `the answer to ${line}`)
      }
      assert.include(out.stdout, "'ECHO: from the repl'")
      assert.include(out.stdout, "'booted,typed'")
      assert.include(out.stderr, "Try: await fleet.list(); await fleet.ask(\"booted\", \"hello\"). Leave with .exit")
      child.stdin!.write(".exit\n")
      await waitUntil(() => out.exited, 20_000, "the REPL to exit")
      assert.strictEqual(out.exit, 0, out.stderr)
    } finally {
      await stop(child, out)
    }
  })

  it("with init's config: the banner's first steps (the README's words) work; piped lines run in order, then it ends", async () => {
    const project = path.join(dir, "repl-init")
    fs.mkdirSync(project)
    assert.strictEqual((await runFlotta(project, ["init"])).code, 0)
    const { child, out } = start(["repl", "--simulate", "--no-mcp"], project)
    try {
      await waitUntil(
        () => (out.stdout.includes("flotta> ") && out.stderr.includes("Leave with .exit")) || out.exited,
        60_000,
        "the REPL prompt"
      )
      const steps = /Try: (.+)\. Leave with \.exit/.exec(out.stderr)?.[1]?.split("; ")
      assert.deepStrictEqual(steps, ["await fleet.list()", "await fleet.ask(\"scout\", \"hello\")"], out.stderr)
      const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8").replace(/\s+/g, " ")
      assert.include(readme, steps!.map((step) => `\`${step}\``).join(", then "), "the README says the same")
      child.stdin!.end(
        [
          ...steps!,
          "await fleet.spawn(\"scout\")",
          "await fleet.ask(\"scout\", \"SLOW 300 first\")",
          "\"second\"",
          "await fleet.spawn(\"helper\").then((a) => a.name)",
          "(await fleet.list()).map((a) => a.name).sort().join(\",\")",
          "\"pids \" + (await fleet.list()).map((a) => a.pid).join(\" \")"
        ].join("\n") + "\n"
      )
      await waitUntil(() => out.exited, 60_000, "the REPL to end with its input")
      assert.strictEqual(out.exit, 0, out.stderr)
    } finally {
      await stop(child, out)
    }
    assert.include(out.stdout, "name: 'scout'")
    assert.include(out.stdout, "'ECHO: hello'")
    const refusals = out.stdout.match(/Uncaught .*/g) ?? []
    assert.deepStrictEqual(refusals, [
      "Uncaught AgentAlreadyExists: an agent named \"scout\" already exists: close it first or pick another name"
    ])
    assert.notInclude(out.stdout, "Proxy")
    assert.isBelow(out.stdout.indexOf("'SLOW DONE first'"), out.stdout.indexOf("'second'"), "in order")
    assert.include(out.stdout, "'helper'")
    assert.include(out.stdout, "'helper,librarian,reviewer,scout'")
    const pids = (/'pids ([\d ]+)'/.exec(out.stdout)?.[1] ?? "").split(" ").map(Number)
    assert.lengthOf(pids, 4)
    // The fleet closed with the REPL: no child outlives it.
    await waitUntil(() => pids.every((pid) => !isAlive(pid)), 10_000, "the agents' claude processes to exit")
  })

  it("boots the config's MCP server and scheduler too, and leaves them off with --no-mcp and --no-schedule", async () => {
    const project = path.join(dir, "repl-composed")
    fs.mkdirSync(project)
    const port = await freePort()
    const allWeek = Object.fromEntries(
      ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, ["00:00-24:00"]])
    )
    fs.writeFileSync(
      path.join(project, "flotta.config.json"),
      JSON.stringify({ mcp: { port }, schedule: { timezone: "utc", hours: allWeek } })
    )
    const session = async (args: ReadonlyArray<string>, line: string) => {
      const { child, out } = start(["repl", "--simulate", ...args], project)
      const prompts = () => (out.stdout.match(/flotta> /g) ?? []).length
      try {
        await waitUntil(() => prompts() >= 1 || out.exited, 60_000, "the REPL prompt")
        child.stdin!.write(line + "\n")
        await waitUntil(() => prompts() >= 2 || out.exited, 60_000, `the answer to ${line}`)
        child.stdin!.write(".exit\n")
        await waitUntil(() => out.exited, 20_000, "the REPL to exit")
        assert.strictEqual(out.exit, 0, out.stderr)
        return out
      } finally {
        await stop(child, out)
      }
    }
    const on = await session([], "(await fleet.scheduler.status()).mode")
    assert.include(on.stderr, `MCP at http://127.0.0.1:${port}/mcp`)
    assert.include(on.stderr, "fleet.scheduler is on")
    assert.include(on.stdout, "'working'")
    // No agent is up: the first step starts one.
    assert.include(on.stderr, "Try: await fleet.spawn(\"scout\"); await fleet.ask(\"scout\", \"hello\")")
    const off = await session(["--no-mcp", "--no-schedule"], "fleet.scheduler === undefined")
    assert.notInclude(off.stderr, "MCP at")
    assert.notInclude(off.stderr, "fleet.scheduler is on")
    assert.include(off.stdout, "true")
  })
})
