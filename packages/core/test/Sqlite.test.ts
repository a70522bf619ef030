/**
 * Core's SQLite client on each driver this Node can load safely (node:sqlite where it exists; better-sqlite3 12
 * below Node 24.19, where a GC of its objects cannot abort the process), and the error when better-sqlite3 is
 * needed but its native binding was never built, or was built for another Node.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Either, Exit, Fiber, Stream } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as Sqlite from "../src/Sqlite.js"
import * as SqliteStore from "../src/SqliteStore.js"

const tempDir = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-sqlite-")))

const [major, minor] = process.versions.node.split(".").map(Number) as [number, number]
const hasNodeSqlite = process.getBuiltinModule?.("node:sqlite") !== undefined
/** Loaded only where its objects' finalizers cannot abort the process, and only where it was built for this Node. */
const betterSqlite3Loads = (major < 24 || (major === 24 && minor < 19)) &&
  Either.isRight(Effect.runSync(Effect.either(Sqlite.driver("probe", "better-sqlite3"))))

/** The drivers exercised here; `auto` is whichever this Node picks. */
const drivers: ReadonlyArray<Sqlite.DriverChoice> = [
  ...(hasNodeSqlite ? ["node:sqlite" as const] : []),
  ...(betterSqlite3Loads ? ["better-sqlite3" as const] : [])
]

const failure = <A, E>(exit: Exit.Exit<A, E>) => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  if (error === undefined) throw new Error(`expected a typed failure, got ${String(exit.cause)}`)
  return error
}

describe("Sqlite: the driver this Node uses", () => {
  it.effect("is node:sqlite where this Node has it, else better-sqlite3 12", () =>
    Effect.gen(function*() {
      const name = yield* Sqlite.driver("here")
      if (hasNodeSqlite) assert.strictEqual(name, "node:sqlite")
      else assert.match(name, /^better-sqlite3 12\.\d+\.\d+$/)
      const file = path.join(tempDir(), "auto.db")
      const sql = yield* Sqlite.make({ filename: file }).pipe(Effect.provide(Reactivity.layer))
      assert.strictEqual(sql.driver, name)
    }).pipe(Effect.scoped))
})

for (const driver of drivers) {
  const open = (file: string, options: { readonly readOnly?: boolean; readonly prepareCacheSize?: number } = {}) =>
    Sqlite.make({ filename: file, driver, ...options }).pipe(Effect.provide(Reactivity.layer))

  describe(`Sqlite on ${driver}`, () => {
    it.effect("reads, writes, raw results, values, plain rows, streams", () =>
      Effect.gen(function*() {
        const file = path.join(tempDir(), "a.db")
        const sql = yield* open(file)
        assert.include(sql.driver, String(driver))
        yield* sql`create table t (k integer primary key, v text, at text)`
        const raw = yield* sql`insert into t (v) values (${"one"})`.raw
        assert.deepStrictEqual(
          { ...(raw as { changes: unknown; lastInsertRowid: unknown }) },
          { changes: 1, lastInsertRowid: 1 }
        )
        const returned = yield* sql<{ readonly k: number }>`insert into t (v) values (${"two"}) returning k`
        assert.deepStrictEqual(returned, [{ k: 2 }])
        yield* sql.unsafe("insert into t (v, at) values (?, ?)", ["three", undefined])
        yield* sql`insert into t (v, at) values (${"four"}, ${new Date(0)})`
        const rows = yield* sql<{ readonly k: number; readonly v: string; readonly at: string | null }>`
          select k, v, at from t order by k`
        assert.deepStrictEqual(rows.map((r) => [r.k, r.v, r.at]), [
          [1, "one", null],
          [2, "two", null],
          [3, "three", null],
          [4, "four", "1970-01-01T00:00:00.000Z"]
        ])
        assert.strictEqual(Object.getPrototypeOf(rows[0]), Object.prototype, "rows are plain objects")
        assert.deepStrictEqual(yield* sql`select k, v from t where k < 3 order by k`.values, [[1, "one"], [2, "two"]])
        // The same statement again answers objects: the array mode was only for `values`.
        assert.deepStrictEqual(yield* sql`select k, v from t where k < 3 order by k`, [{ k: 1, v: "one" }, {
          k: 2,
          v: "two"
        }])
        const streamed = yield* Stream.runCollect(sql`select v from t order by k`.stream)
        assert.deepStrictEqual(Chunk.toArray(streamed).map((r) => r.v), ["one", "two", "three", "four"])
        const changed = yield* sql.unsafe("update t set v = upper(v) where k > ?", [2]).unprepared
        assert.deepStrictEqual(changed, [])
        assert.deepStrictEqual(yield* sql`select v from t where k = 4`, [{ v: "FOUR" }])
      }).pipe(Effect.scoped))

    it.effect("pragmas answer; WAL with synchronous = normal, a 16 MB cache and a 5 s busy timeout", () =>
      Effect.gen(function*() {
        const file = path.join(tempDir(), "p.db")
        const sql = yield* open(file)
        assert.deepStrictEqual(yield* sql`pragma journal_mode`, [{ journal_mode: "wal" }])
        assert.deepStrictEqual(yield* sql`pragma synchronous`, [{ synchronous: 1 }])
        assert.deepStrictEqual(yield* sql`pragma cache_size`, [{ cache_size: -16000 }])
        assert.deepStrictEqual(yield* sql`pragma busy_timeout`, [{ timeout: 5000 }])
        yield* sql`pragma synchronous = full`
        assert.deepStrictEqual(yield* sql`pragma synchronous`, [{ synchronous: 2 }])
      }).pipe(Effect.scoped))

    it.effect("SafeIntegers turns integers into BigInt for one call, and back", () =>
      Effect.gen(function*() {
        const sql = yield* open(path.join(tempDir(), "i.db"))
        const query = sql<{ readonly n: unknown }>`select 42 as n`
        assert.deepStrictEqual(yield* query.pipe(Effect.provideService(SqlClient.SafeIntegers, true)), [{ n: 42n }])
        assert.deepStrictEqual(yield* sql<{ readonly n: unknown }>`select 42 as n`, [{ n: 42 }])
        assert.deepStrictEqual(
          yield* sql`select 9007199254740993 as n`.values.pipe(Effect.provideService(SqlClient.SafeIntegers, true)),
          [[9007199254740993n]]
        )
      }).pipe(Effect.scoped))

    it.effect("a transaction commits or rolls back whole, and holds the connection while it runs", () =>
      Effect.gen(function*() {
        const sql = yield* open(path.join(tempDir(), "x.db"))
        yield* sql`create table t (v text)`
        const failed = yield* Effect.exit(
          sql.withTransaction(Effect.zipRight(sql`insert into t values ('lost')`, Effect.fail("no")))
        )
        assert.isTrue(Exit.isFailure(failed))
        const inside = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const transaction = yield* Effect.fork(sql.withTransaction(
          Effect.gen(function*() {
            yield* sql`insert into t values ('kept')`
            yield* Effect.exit(
              sql.withTransaction(Effect.zipRight(sql`insert into t values ('inner')`, Effect.fail(1)))
            )
            yield* Deferred.succeed(inside, undefined)
            yield* Deferred.await(release)
          })
        ))
        yield* Deferred.await(inside)
        // Another fiber's statement waits for the transaction to end.
        const other = yield* Effect.fork(sql`insert into t values ('after')`)
        for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
        assert.isNull(other.unsafePoll())
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(transaction)
        yield* Fiber.join(other)
        assert.deepStrictEqual(yield* sql`select v from t order by rowid`, [{ v: "kept" }, { v: "after" }])
      }).pipe(Effect.scoped))

    it.effect("errors carry SQLite's words and the driver; a statement that failed to prepare is prepared again", () =>
      Effect.gen(function*() {
        const sql = yield* open(path.join(tempDir(), "e.db"))
        const error = failure(yield* Effect.exit(sql`select * from later`))
        assert.strictEqual(error._tag, "SqlError")
        assert.include(error.message, sql.driver)
        assert.include(String((error.cause as Error).message), "no such table: later")
        yield* sql`create table later (v text)`
        assert.deepStrictEqual(yield* sql`select * from later`, [])
      }).pipe(Effect.scoped))

    it.effect("read-only: reads what a writer committed beside it, refuses writes, sets no WAL", () =>
      Effect.gen(function*() {
        const file = path.join(tempDir(), "r.db")
        const writer = yield* open(file)
        yield* writer`create table t (v text)`
        yield* writer`insert into t values ('x')`
        const reader = yield* open(file, { readOnly: true })
        assert.deepStrictEqual(yield* reader`select v from t`, [{ v: "x" }])
        const refused = failure(yield* Effect.exit(reader`insert into t values ('y')`))
        assert.match(String((refused.cause as Error).message), /readonly database/)
        const missing = failure(yield* Effect.exit(open(path.join(tempDir(), "none.db"), { readOnly: true })))
        assert.strictEqual(missing._tag, "SqlError")
      }).pipe(Effect.scoped))

    it.effect("a small prepare cache churning through thousands of statements", () =>
      Effect.gen(function*() {
        const sql = yield* open(path.join(tempDir(), "c.db"), { prepareCacheSize: 8 })
        yield* sql`create table t (n integer)`
        for (let i = 0; i < 2000; i++) yield* sql.unsafe(`insert into t values (${i})`)
        assert.deepStrictEqual(yield* sql`select count(*) as c, sum(n) as s from t`, [{ c: 2000, s: 1999000 }])
      }).pipe(Effect.scoped))

    it("openSync reads and writes a file the same way, synchronously", () => {
      const file = path.join(tempDir(), "s.db")
      const db = Sqlite.openSync(file, { driver })
      db.exec("create table t (v text)")
      assert.deepStrictEqual({ ...db.prepare("insert into t values (?)").run(["a"]) }, {
        changes: 1,
        lastInsertRowid: 1
      })
      db.close()
      const reader = Sqlite.openSync(file, { driver, readOnly: true })
      assert.deepStrictEqual(reader.prepare("select v from t").all(), [{ v: "a" }])
      assert.deepStrictEqual(reader.prepare("pragma journal_mode").values(), [["wal"]])
      reader.close()
    })
  })
}

/** A copy of the installed better-sqlite3 with no native binding, or with `binding` in its place. */
const fakeBetterSqlite3 = (binding?: Buffer) => {
  const real = path.dirname(createRequire(import.meta.url).resolve("better-sqlite3/package.json"))
  const root = tempDir()
  const modules = path.join(root, "node_modules")
  const dir = path.join(modules, "better-sqlite3")
  fs.mkdirSync(dir, { recursive: true })
  fs.copyFileSync(path.join(real, "package.json"), path.join(dir, "package.json"))
  fs.cpSync(path.join(real, "lib"), path.join(dir, "lib"), { recursive: true })
  const bindings = path.dirname(createRequire(path.join(real, "lib", "x.js")).resolve("bindings/package.json"))
  fs.symlinkSync(bindings, path.join(modules, "bindings"))
  if (binding !== undefined) {
    fs.mkdirSync(path.join(dir, "build", "Release"), { recursive: true })
    fs.writeFileSync(path.join(dir, "build", "Release", "better_sqlite3.node"), binding)
  }
  return { root, dir }
}

describe("Sqlite: better-sqlite3 that does not load", () => {
  const command = (dir: string) => `cd "${dir}" && npm run install`

  it.effect("never built (npm skipped its install script): StoreUnavailable says exactly what to run", () =>
    Effect.gen(function*() {
      const { dir, root } = fakeBetterSqlite3()
      const file = path.join(tempDir(), "state.db")
      const error = failure(
        yield* Effect.exit(
          Sqlite.make({ filename: file, driver: { betterSqlite3From: root } }).pipe(Effect.provide(Reactivity.layer))
        )
      )
      assert.strictEqual(error._tag, "StoreUnavailable")
      if (error._tag !== "StoreUnavailable") return
      assert.strictEqual(error.location, file)
      assert.include(
        error.reason,
        `better-sqlite3 12.11.1 is installed in ${dir} but its native binding was never built`
      )
      assert.strictEqual(
        error.hint,
        `Build it with \`${command(dir)}\`, or run flotta on Node 22.13 or later, whose built-in node:sqlite needs ` +
          "no build"
      )
      assert.notInclude(error.message, "Could not locate the bindings file")
      assert.include(error.message, `the store ${file} cannot be used: better-sqlite3 12.11.1 is installed`)
      assert.isFalse(fs.existsSync(file), "nothing was created")
      // The same from the synchronous open and the driver's name.
      assert.throws(() => Sqlite.openSync(file, { driver: { betterSqlite3From: root } }), command(dir))
      const named = failure(yield* Effect.exit(Sqlite.driver("x", { betterSqlite3From: root })))
      assert.strictEqual(named.hint, error.hint)
    }).pipe(Effect.scoped))

  it.effect("the store opened on it fails with that StoreUnavailable, and leaves no lock behind", () =>
    Effect.gen(function*() {
      const { dir, root } = fakeBetterSqlite3()
      const file = path.join(tempDir(), "state.db")
      const error = failure(
        yield* Effect.exit(Effect.scoped(SqliteStore.make(file, { driver: { betterSqlite3From: root } })))
      )
      assert.strictEqual(error._tag, "StoreUnavailable")
      assert.include(error.message, `the store ${file} cannot be used: better-sqlite3 12.11.1 is installed in ${dir}`)
      assert.include(error.message, command(dir))
      assert.isFalse(fs.existsSync(`${file}.lock`))
    }))

  it.effect("a binding that does not load on this Node: the same command", () =>
    Effect.gen(function*() {
      const { dir, root } = fakeBetterSqlite3(Buffer.from("not a shared object"))
      const error = failure(yield* Effect.exit(Sqlite.driver("here", { betterSqlite3From: root })))
      assert.include(error.reason, `better-sqlite3 12.11.1 in ${dir} has a native binding that does not load on Node`)
      assert.include(error.reason, "better_sqlite3.node")
      assert.include(error.hint, command(dir))
    }))
})
