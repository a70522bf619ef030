/**
 * A third-party client over a real loopback port: the MCP Inspector CLI (pinned), run with `npx -y` and a
 * throwaway HOME (it keeps state in ~/.mcp-inspector). It is not a dependency: its install brings a second
 * vite, rolldown and react (about 110 MB, and engines: node >= 22.19), so it is fetched on demand into npm's
 * cache instead. It lists the tools (with --strict, its schema portability check) and calls them in both eras.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import * as os from "node:os"
import * as path from "node:path"
import * as McpServer from "../packages/mcp/src/McpServer.js"
import * as Tools from "../packages/mcp/src/Tools.js"
import { fakeFleet, tempDir } from "./support/mcp.js"

const INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
const TOKEN = "inspector-token-0123456789"
// npm's own cache, not the throwaway HOME's: the package is downloaded once, not on every run.
const NPM_CACHE = process.env.npm_config_cache ?? path.join(os.homedir(), ".npm")

interface Outcome {
  readonly code: number
  readonly json: { readonly result?: Record<string, unknown> } | undefined
  readonly stderr: string
}

const inspector = (home: string, url: string, args: ReadonlyArray<string>) =>
  Effect.async<Outcome>((resume) => {
    const child = execFile("npx", ["-y", INSPECTOR, "--cli", url, ...args, "--format", "json", "-q"], {
      env: { ...process.env, HOME: home, npm_config_cache: NPM_CACHE, npm_config_update_notifier: "false" },
      timeout: 110_000
    }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1
      let json: Outcome["json"]
      try {
        json = stdout.trim() === "" ? undefined : JSON.parse(stdout)
      } catch {
        json = undefined
      }
      resume(Effect.succeed({ code, json, stderr }))
    })
    return Effect.sync(() => child.kill())
  })

const serve = (config: { readonly token?: string } = {}) =>
  Layer.build(McpServer.layer({ port: 0, ...config }).pipe(Layer.provide(fakeFleet()))).pipe(
    Effect.map(Context.get(McpServer.McpServer))
  )

const structured = (outcome: Outcome) => (outcome.json?.result?.structuredContent ?? {}) as Record<string, unknown>

describe("the MCP Inspector CLI against the server", () => {
  it.scopedLive("lists the tools and calls them, in the legacy and the modern era", () =>
    Effect.gen(function*() {
      const home = yield* tempDir
      const { url } = yield* serve()
      const listed = yield* inspector(home, url, ["--method", "tools/list", "--strict"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      const tools = (listed.json?.result?.tools ?? []) as Array<{ name: string }>
      assert.strictEqual(tools.length, Tools.tools.length)

      const spawned = yield* inspector(home, url, [
        "--method",
        "tools/call",
        "--tool-name",
        "flotta_spawn",
        "--tool-arg",
        "name=inspected"
      ])
      assert.strictEqual(spawned.code, 0, spawned.stderr)
      assert.strictEqual(structured(spawned).name, "inspected")

      const asked = yield* inspector(home, url, [
        "--protocol-era",
        "modern",
        "--method",
        "tools/call",
        "--tool-name",
        "flotta_ask",
        "--tool-args-json",
        JSON.stringify({ name: "inspected", text: "hello" })
      ])
      assert.strictEqual(asked.code, 0, asked.stderr)
      assert.deepInclude(structured(asked), { done: true, turnId: "t1" })

      // A typed failure is a tool error (exit code 5), and its structured content passes the client's checks.
      const missing = yield* inspector(home, url, [
        "--method",
        "tools/call",
        "--tool-name",
        "flotta_info",
        "--tool-arg",
        "name=nobody"
      ])
      assert.strictEqual(missing.code, 5, missing.stderr)
      assert.isTrue(missing.json?.result?.isError)
      assert.deepInclude(structured(missing), {
        error: { _tag: "AgentNotFound", message: "no agent named \"nobody\" (live agents: inspected)" }
      })
    }), 120_000)

  it.scopedLive("needs the bearer token when one is configured", () =>
    Effect.gen(function*() {
      const home = yield* tempDir
      const { url } = yield* serve({ token: TOKEN })
      const refused = yield* inspector(home, url, ["--method", "tools/list"])
      assert.strictEqual(refused.code, 3, refused.stderr)
      const allowed = yield* inspector(home, url, [
        "--header",
        `Authorization: Bearer ${TOKEN}`,
        "--method",
        "tools/call",
        "--tool-name",
        "flotta_list"
      ])
      assert.strictEqual(allowed.code, 0, allowed.stderr)
      assert.deepStrictEqual(structured(allowed), { agents: [] })
    }), 120_000)
})
