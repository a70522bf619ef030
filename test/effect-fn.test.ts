/**
 * One idiom: every exported function of a src module that returns an Effect is built with `Effect.fn` (a span
 * named `Module.name`), or `Effect.fnUntraced` where a span of its own is not wanted: the hot paths, and core's inner
 * steps, whose spans are named where the work happens (`flotta.spawn`: a child's TRACEPARENT is that span). Read from
 * the syntax (no type checker, so it stays fast): a function is taken to return an Effect when its declared return
 * type is `Effect.Effect<…>`, or when its body is (or a `return` of its own gives) an `Effect.*` call or an
 * `Effect.*(…).pipe(…)`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const ROOT = path.join(import.meta.dirname, "..")

const sources = (): ReadonlyArray<string> =>
  fs.readdirSync(path.join(ROOT, "packages")).flatMap((pkg) => {
    const src = path.join(ROOT, "packages", pkg, "src")
    if (!fs.existsSync(src)) return []
    return fs.readdirSync(src, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
      .map((file) => path.join("packages", pkg, "src", file))
  }).sort()

/** `Effect.x(…)`, or a chain of calls and `.pipe(…)` that starts with one. */
const isEffectCall = (node: ts.Node): boolean => {
  if (ts.isParenthesizedExpression(node)) return isEffectCall(node.expression)
  if (!ts.isCallExpression(node)) return false
  const callee = node.expression
  if (ts.isPropertyAccessExpression(callee)) {
    if (ts.isIdentifier(callee.expression) && callee.expression.text === "Effect") return true
    if (callee.name.text === "pipe") return isEffectCall(callee.expression)
  }
  return false
}

/** The expressions a function's own `return`s give (not those of the functions inside it). */
const returned = (body: ts.Block): ReadonlyArray<ts.Expression> => {
  const found: Array<ts.Expression> = []
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node)) return
    if (ts.isReturnStatement(node) && node.expression !== undefined) found.push(node.expression)
    ts.forEachChild(node, visit)
  }
  body.statements.forEach(visit)
  return found
}

const returnsEffect = (fn: ts.ArrowFunction | ts.FunctionExpression | ts.FunctionDeclaration, file: ts.SourceFile) => {
  if (fn.type !== undefined && /^Effect\.Effect\b/.test(fn.type.getText(file))) return true
  if (fn.body === undefined) return false
  return ts.isBlock(fn.body) ? returned(fn.body).some(isEffectCall) : isEffectCall(fn.body)
}

/** The exported functions that return an Effect without being built with Effect.fn, as `file:line name`. */
const plainEffectFunctions = (file: string): ReadonlyArray<string> => {
  const source = ts.createSourceFile(file, fs.readFileSync(path.join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true)
  const at = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`
  return source.statements.flatMap((statement) => {
    const exported = ts.canHaveModifiers(statement) &&
      ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) === true
    if (!exported) return []
    if (ts.isFunctionDeclaration(statement)) {
      return returnsEffect(statement, source) ? [`${at(statement)} ${statement.name?.text}`] : []
    }
    if (!ts.isVariableStatement(statement)) return []
    return statement.declarationList.declarations.flatMap((declaration) => {
      const init = declaration.initializer
      if (init === undefined || !(ts.isArrowFunction(init) || ts.isFunctionExpression(init))) return []
      return returnsEffect(init, source) ? [`${at(declaration)} ${declaration.name.getText(source)}`] : []
    })
  })
}

describe("one idiom for Effect functions", () => {
  it("builds every exported Effect-returning function of packages/*/src with Effect.fn", () => {
    expect(sources().flatMap(plainEffectFunctions), "exported functions returning an Effect without Effect.fn")
      .toEqual([])
  })

  it("recognizes the plain shapes it forbids, and lets Effect.fn through", () => {
    const probe = path.join("node_modules", ".cache", "effect-fn-probe.ts")
    fs.mkdirSync(path.dirname(path.join(ROOT, probe)), { recursive: true })
    fs.writeFileSync(
      path.join(ROOT, probe),
      [
        `export const a = (x: number) => Effect.succeed(x)`,
        `export const b = (x: number): Effect.Effect<number> => { return Effect.succeed(x) }`,
        `export const c = (x: number) => Effect.succeed(x).pipe(Effect.map((n) => n + 1))`,
        `export function d(x: number): Effect.Effect<number> { return Effect.succeed(x) }`,
        `export const e = Effect.fn("M.e")(function*(x: number) { return x })`,
        `export const f = (x: number) => x + 1`,
        `export const h = (x: number) => { if (x > 0) return Effect.succeed(x); return Effect.fail("no") }`,
        `export const i = (x: number) => { const g = () => Effect.succeed(x); return g }`,
        `const g = (x: number) => Effect.succeed(x)`
      ].join("\n")
    )
    expect(plainEffectFunctions(probe).map((found) => found.split(" ")[1])).toEqual(["a", "b", "c", "d", "h"])
  })
})
