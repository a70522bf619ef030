/**
 * `flotta notify test` as a user runs it, with no serve: each target of the config gets one signed test event,
 * the output names each URL by its origin only, and a target that refuses it makes the exit code 16; without a
 * `notify` section the command says so (exit code 3). `flotta doctor` lists the targets.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createHmac } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { runFlotta } from "./support/cli.js"

const SECRET = "the-receiver-checks-this-secret"

let dir: string
let server: http.Server
let base: string
const got: Array<{ path: string; signed: boolean; kind: string }> = []

beforeAll(async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-notify-")))
  server = http.createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      const expected = `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`
      got.push({
        path: request.url ?? "",
        signed: request.headers["x-flotta-signature"] === expected,
        kind: (JSON.parse(body) as { kind?: string }).kind ?? "slack"
      })
      response.statusCode = request.url?.startsWith("/refuses/") ? 410 : 200
      response.end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve))
  fs.rmSync(dir, { recursive: true, force: true })
})

describe("flotta notify test", () => {
  it("sends each target a signed test event; a refusal is exit code 16", { timeout: 120_000 }, async () => {
    const project = path.join(dir, "project")
    fs.mkdirSync(project)
    fs.writeFileSync(
      path.join(project, "flotta.config.json"),
      JSON.stringify({
        notify: [
          { url: `${base}/takes/hidden-token`, events: ["run_finished"], secret: SECRET },
          { url: `${base}/refuses/hidden-token`, events: ["*"], secret: SECRET, format: "slack" }
        ]
      })
    )
    const one = await runFlotta(project, ["notify", "test", "--target", "1"])
    assert.strictEqual(one.code, 0, one.stderr)
    assert.match(
      one.stdout,
      new RegExp(`^ok {4}1 ${base}/…  200 in \\d+ ms \\(json, signed; delivery \\w+-test-\\d+\\)\\n$`)
    )
    assert.deepStrictEqual(got, [{ path: "/takes/hidden-token", signed: true, kind: "notify_test" }])

    const all = await runFlotta(project, ["notify", "test"])
    assert.strictEqual(all.code, 16, all.stderr)
    assert.match(all.stdout, /^FAIL {2}2 .*it answered 410/m)
    assert.include(all.stderr, "NotificationFailed: 1 of 2 notification targets did not take the test notification")
    assert.notInclude(all.stdout + all.stderr, "hidden-token")
    assert.strictEqual(got.length, 3)
    assert.isTrue(got.every((r) => r.signed))

    const listed = await runFlotta(project, ["notify", "--json"])
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.deepStrictEqual(
      (JSON.parse(listed.stdout) as { targets: Array<{ url: string; format: string }> }).targets.map((
        t
      ) => [t.url, t.format]),
      [[`${base}/…`, "json"], [`${base}/…`, "slack"]]
    )

    const doctor = await runFlotta(project, ["doctor"])
    assert.include(doctor.stdout, `notify: ${base}/… (json, signed) for run_finished: nothing sent yet`)
  })

  it("without a notify section: nothing to send to, exit code 3", { timeout: 60_000 }, async () => {
    const empty = path.join(dir, "empty")
    fs.mkdirSync(empty)
    const ran = await runFlotta(empty, ["notify", "test"])
    assert.strictEqual(ran.code, 3)
    assert.match(ran.stderr, /^flotta: NotifyNotConfigured: no config file here: no notify section/)
  })
})
