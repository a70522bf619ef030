/**
 * The two synchronous SQLite drivers behind `Sqlite`, as one small interface: Node's built-in `node:sqlite`
 * wherever this Node has it (22.13 and later), and `better-sqlite3` (an optional dependency, loaded only when
 * asked for) where it has not (Node 20). better-sqlite3 12 aborts the process on Node 24.19 and later when a GC
 * finalizes one of its statements outside JS, so `auto` never loads it where node:sqlite exists.
 *
 * @types/node stays at 20, which has no `node:sqlite`: what is used of it is typed here.
 */
import { createRequire } from "node:module"
import * as path from "node:path"

export interface RunResult {
  readonly changes: number | bigint
  readonly lastInsertRowid: number | bigint
}

/** A prepared statement; parameters are positional. */
export interface SyncStatement {
  /** Whether it answers with rows (a query, a pragma that answers, `returning`). */
  readonly reader: boolean
  readonly all: (params?: ReadonlyArray<unknown>) => Array<Record<string, unknown>>
  readonly values: (params?: ReadonlyArray<unknown>) => Array<Array<unknown>>
  readonly run: (params?: ReadonlyArray<unknown>) => RunResult
  /** Integers come back as BigInt while on. */
  readonly safeIntegers: (on: boolean) => void
}

export interface SyncDatabase {
  /** `node:sqlite`, or `better-sqlite3 12.11.1`. */
  readonly driver: string
  readonly prepare: (sql: string) => SyncStatement
  readonly exec: (sql: string) => void
  readonly close: () => void
}

export interface OpenOptions {
  readonly readOnly: boolean
}

export interface Driver {
  readonly name: string
  readonly open: (filename: string, options: OpenOptions) => SyncDatabase
}

/** Which driver: `auto` is node:sqlite where this Node has it, else better-sqlite3; `from` resolves it elsewhere. */
export type DriverChoice = "auto" | "node:sqlite" | "better-sqlite3" | { readonly betterSqlite3From: string }

/** No driver can be loaded: why, and what to run. */
export class DriverUnavailable extends Error {
  constructor(readonly reason: string, readonly hint: string) {
    super(`${reason}. ${hint}`)
  }
}

// --- node:sqlite -------------------------------------------------------------------------------------------

interface NodeStatement {
  all(...params: ReadonlyArray<unknown>): Array<Record<string, unknown>>
  run(...params: ReadonlyArray<unknown>): RunResult
  setReadBigInts(on: boolean): void
  /** Node 22.16 and later. */
  columns?: () => ReadonlyArray<unknown>
  /** Node 22.16 and later. */
  setReturnArrays?: (on: boolean) => void
}

interface NodeDatabase {
  prepare(sql: string): NodeStatement
  exec(sql: string): void
  close(): void
}

interface NodeSqlite {
  readonly DatabaseSync: new(
    filename: string,
    options: { readonly readOnly: boolean; readonly enableForeignKeyConstraints: boolean }
  ) => NodeDatabase
}

/** Without `columns()` (Node 22.13 to 22.15) a statement that answers is told by its text. */
const READER_TEXT = /^\s*(?:select|with|values|pragma|explain)\b|\breturning\b/i

/**
 * node:sqlite refuses `undefined` and binds a Date as null without a word, better-sqlite3 refuses both: with
 * either driver `undefined` binds as null and a Date as its ISO text.
 */
const bindable = (params: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
  for (let i = 0; i < params.length; i++) {
    const p = params[i]
    if (p === undefined || p instanceof Date) {
      return params.map((v) => (v === undefined ? null : v instanceof Date ? v.toISOString() : v))
    }
  }
  return params
}

const NO_PARAMS: ReadonlyArray<unknown> = []

/** Rows as arrays: `read` runs with the statement's array mode on, and the mode is off again after. */
const asArrays = (setArrays: (on: boolean) => void, read: () => ReadonlyArray<unknown>): Array<Array<unknown>> => {
  setArrays(true)
  try {
    return read() as Array<Array<unknown>>
  } finally {
    setArrays(false)
  }
}

/** A `safeIntegers` that tells the driver only when the mode changes. */
const bigIntSwitch = (set: (on: boolean) => void) => {
  let bigInts = false
  return (on: boolean) => {
    if (on !== bigInts) set(bigInts = on)
  }
}

const nodeStatement = (statement: NodeStatement, sql: string): SyncStatement => {
  const reader = statement.columns === undefined ? READER_TEXT.test(sql) : statement.columns().length > 0
  const setArrays = statement.setReturnArrays?.bind(statement)
  return {
    reader,
    // Rows come back as objects without a prototype: callers get plain ones.
    all: (params = NO_PARAMS) => statement.all(...bindable(params)).map((row) => ({ ...row })),
    values: (params = NO_PARAMS) =>
      setArrays === undefined
        ? statement.all(...bindable(params)).map((row) => Object.values(row))
        : asArrays(setArrays, () => statement.all(...bindable(params))),
    run: (params = NO_PARAMS) => statement.run(...bindable(params)),
    safeIntegers: bigIntSwitch((on) => statement.setReadBigInts(on))
  }
}

let nodeSqliteModule: NodeSqlite | null | undefined

/** node:sqlite, or null where this Node has none. Node 22 warns that it is experimental: not our users' concern. */
const loadNodeSqlite = (): NodeSqlite | null => {
  if (nodeSqliteModule !== undefined) return nodeSqliteModule
  const emitWarning = process.emitWarning
  process.emitWarning = ((warning: string | Error, ...rest: Array<never>) => {
    if (!String(warning).includes("SQLite is an experimental feature")) emitWarning.call(process, warning, ...rest)
  }) as typeof process.emitWarning
  try {
    const loaded = process.getBuiltinModule?.("node:sqlite") as NodeSqlite | undefined
    nodeSqliteModule = loaded?.DatabaseSync === undefined ? null : loaded
  } catch {
    nodeSqliteModule = null
  } finally {
    process.emitWarning = emitWarning
  }
  return nodeSqliteModule
}

const nodeSqliteDriver = (module: NodeSqlite): Driver => ({
  name: "node:sqlite",
  open: (filename, options) => {
    const db = new module.DatabaseSync(filename, { readOnly: options.readOnly, enableForeignKeyConstraints: true })
    return {
      driver: "node:sqlite",
      prepare: (sql) => nodeStatement(db.prepare(sql), sql),
      exec: (sql) => db.exec(sql),
      close: () => db.close()
    }
  }
})

// --- better-sqlite3 ----------------------------------------------------------------------------------------

interface BetterStatement {
  readonly reader: boolean
  all(...params: ReadonlyArray<unknown>): Array<Record<string, unknown>>
  run(...params: ReadonlyArray<unknown>): RunResult
  raw(on: boolean): BetterStatement
  safeIntegers(on: boolean): BetterStatement
}

interface BetterDatabase {
  prepare(sql: string): BetterStatement
  exec(sql: string): void
  close(): void
}

type BetterSqlite3 = new(
  filename: string,
  options: { readonly readonly: boolean; readonly fileMustExist: boolean }
) => BetterDatabase

/** The one command that builds better-sqlite3's binding, on npm 11 and 12, global or not. */
export const buildCommand = (packageDir: string) => `cd ${JSON.stringify(packageDir)} && npm run install`

const NEWER_NODE = "or run flotta on Node 22.13 or later, whose built-in node:sqlite needs no build"

const probes: Array<BetterDatabase> = []

const betterSqlite3Driver = (from: string | undefined): Driver => {
  const require = createRequire(from === undefined ? import.meta.url : path.join(path.resolve(from), "noop.js"))
  let manifest: string
  try {
    manifest = require.resolve("better-sqlite3/package.json")
  } catch {
    throw new DriverUnavailable(
      `Node ${process.version} has no node:sqlite, and better-sqlite3 12 (the SQLite driver flotta needs on Node ` +
        `20) is not installed${from === undefined ? "" : ` where it was looked for (${from})`}`,
      "Install it beside flotta with `npm install better-sqlite3@12` (with -g for a global flotta: " +
        `\`npm install -g flotta better-sqlite3@12\`), ${NEWER_NODE}`
    )
  }
  const packageDir = path.dirname(manifest)
  const version = (require(manifest) as { readonly version: string }).version
  const name = `better-sqlite3 ${version}`
  let Database: BetterSqlite3
  try {
    Database = require(packageDir) as BetterSqlite3
    // The native binding is loaded by the first database, not by the require. The probe is kept: on Node 24.19
    // and later a better-sqlite3 object the GC finalizes can abort the process.
    probes.push(new Database(":memory:", { readonly: false, fileMustExist: false }))
    probes.at(-1)!.close()
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ")
    const abi = /NODE_MODULE_VERSION (\d+)\. This version of Node\.js requires NODE_MODULE_VERSION (\d+)/.exec(message)
    const reason = message.includes("Could not locate the bindings file")
      ? `${name} is installed in ${packageDir} but its native binding was never built (npm skipped its install ` +
        `script: npm 12 runs none that the project's allowScripts does not name, and --ignore-scripts runs none)`
      : abi !== null
      ? `${name} in ${packageDir} was built for another Node (module version ${abi[1]}; Node ${process.version} ` +
        `needs ${abi[2]})`
      : `${name} in ${packageDir} has a native binding that does not load on Node ${process.version} (${
        message.slice(0, 300)
      })`
    throw new DriverUnavailable(reason, `Build it with \`${buildCommand(packageDir)}\`, ${NEWER_NODE}`)
  }
  return {
    name,
    open: (filename, options) => {
      const db = new Database(filename, { readonly: options.readOnly, fileMustExist: options.readOnly })
      return {
        driver: name,
        prepare: (sql) => {
          const statement = db.prepare(sql)
          return {
            reader: statement.reader,
            all: (params = NO_PARAMS) => statement.all(...bindable(params)),
            values: (params = NO_PARAMS) =>
              asArrays((on) => statement.raw(on), () => statement.all(...bindable(params))),
            run: (params = NO_PARAMS) => statement.run(...bindable(params)),
            safeIntegers: bigIntSwitch((on) => statement.safeIntegers(on))
          }
        },
        exec: (sql) => db.exec(sql),
        close: () => db.close()
      }
    }
  }
}

// --- choosing ----------------------------------------------------------------------------------------------

const loaded = new Map<string, Driver>()

/** The driver for a choice, loaded once per process; throws `DriverUnavailable`. */
export const load = (choice: DriverChoice = "auto"): Driver => {
  const key = typeof choice === "string" ? choice : `from:${path.resolve(choice.betterSqlite3From)}`
  const known = loaded.get(key)
  if (known !== undefined) return known
  let driver: Driver
  if (choice === "auto" || choice === "node:sqlite") {
    const module = loadNodeSqlite()
    if (module !== null) driver = nodeSqliteDriver(module)
    else if (choice === "auto") driver = betterSqlite3Driver(undefined)
    else {
      throw new DriverUnavailable(
        `Node ${process.version} has no node:sqlite`,
        "Run flotta on Node 22.13 or later"
      )
    }
  } else {
    driver = betterSqlite3Driver(choice === "better-sqlite3" ? undefined : choice.betterSqlite3From)
  }
  loaded.set(key, driver)
  return driver
}
