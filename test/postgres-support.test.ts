/**
 * The throwaway Postgres of `test/support/postgres.ts`: it starts, answers `pg` on both its default database and
 * one made by `createDatabase`, and once stopped its port refuses connections and its temp dir is gone.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import { findPostgresBinaries, type Postgres, startPostgres } from "./support/postgres.js"

/** The slice of `pg` used here: the package ships no types and @types/pg is not installed, so no `import pg`. */
interface PgClient {
  connect(): Promise<unknown>
  query(sql: string): Promise<{ readonly rows: ReadonlyArray<Record<string, unknown>> }>
  end(): Promise<void>
}
const pg = createRequire(import.meta.url)("pg") as { Client: new(config: { connectionString: string }) => PgClient }

const found = findPostgresBinaries()
if ("missing" in found) throw new Error(`test/postgres-support.test.ts needs ${found.missing}`)

/** Whether something accepts a TCP connection on 127.0.0.1:port (a closed loopback port refuses at once). */
const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

const queryOne = async (url: string, sql: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(sql)).rows[0]!
  } finally {
    await client.end()
  }
}

describe(`a throwaway Postgres (${found.bin})`, () => {
  let server: Postgres | undefined
  beforeAll(async () => {
    server = await startPostgres()
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("answers queries, creates databases, and stops for good", async () => {
    const pgServer = server!
    const port = Number(new URL(pgServer.url).port)
    assert.strictEqual(new URL(pgServer.url).hostname, "127.0.0.1")
    assert.isTrue(fs.existsSync(pgServer.dataDir))

    assert.deepStrictEqual(await queryOne(pgServer.url, "select 1 as one"), { one: 1 })
    const version = await queryOne(pgServer.url, "show server_version_num")
    assert.match(String(version.server_version_num), /^15\d{4}$/)

    const otherUrl = await pgServer.createDatabase("flotta_second")
    assert.strictEqual(new URL(otherUrl).pathname, "/flotta_second")
    assert.deepStrictEqual(await queryOne(otherUrl, "select current_database() as db"), { db: "flotta_second" })

    await pgServer.stop()
    assert.isFalse(await accepts(port), `port ${port} still accepts connections after stop`)
    assert.isFalse(fs.existsSync(pgServer.dataDir), "the temp dir is removed")
    await pgServer.stop() // a second stop (the afterAll one) does nothing
  })
})
