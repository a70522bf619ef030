// ESLint with the Effect rules: dprint formatting (2 spaces, width 120, no semicolons, double quotes,
// no trailing commas, arrow parens) and typescript-eslint's recommended checks.
import effect from "@effect/eslint-plugin"
import * as fs from "node:fs"
import tseslint from "typescript-eslint"

// What src must not do anywhere (console, timers, Date.now, process.exit, async).
const srcRules = [{
  selector: "CallExpression[callee.object.name='console']",
  message: "log with Effect.log* (stderr belongs to the CLI)"
}, {
  selector: "CallExpression[callee.name='setTimeout']",
  message: "use Effect.sleep or Schedule (TestClock must control time)"
}, {
  selector: "MemberExpression[object.name='Date'][property.name='now']",
  message: "use Clock (TestClock must control time)"
}, {
  selector: "CallExpression[callee.object.name='process'][callee.property.name='exit']",
  message: "use NodeRuntime.runMain"
}, {
  selector: "FunctionDeclaration[async=true], ArrowFunctionExpression[async=true], FunctionExpression[async=true]",
  message: "use Effect.gen"
}]

// `unsafe*` calls and running an effect outside the runtime (`Effect.runSync`, `Runtime.runFork`, ...) are confined
// to the files ARCHITECTURE.md names under "Where `unsafe*` is allowed" (the hand-driven turn path and the few other
// synchronous seams): the list is read from there, so the page and the rule cannot drift apart.
const unsafeMessage = "unsafe* and Effect.run*/Runtime.run* only in the files ARCHITECTURE.md allows (see " +
  "\"Where `unsafe*` is allowed\"): use the effectful form, or add the file there with why"
const unsafeRules = [{
  selector: "MemberExpression[property.name=/^unsafe[A-Z]/]",
  message: unsafeMessage
}, {
  selector: "CallExpression[callee.name=/^unsafe[A-Z]/]",
  message: unsafeMessage
}, {
  selector: "MemberExpression[object.name=/^(Effect|Runtime)$/][property.name=/^run(Sync|Promise|Fork|Callback)/]",
  message: unsafeMessage
}]

/** The src files ARCHITECTURE.md allows `unsafe*` in: the backticked paths between its two markers. */
export const unsafeAllowed = (() => {
  const page = fs.readFileSync(new URL("./ARCHITECTURE.md", import.meta.url), "utf8")
  const start = page.indexOf("<!-- unsafe-allowed:start -->")
  const end = page.indexOf("<!-- unsafe-allowed:end -->")
  if (start === -1 || end < start) throw new Error("ARCHITECTURE.md: the unsafe-allowed markers are missing")
  const files = [...page.slice(start, end).matchAll(/`(packages\/[a-z]+\/src\/[A-Za-z0-9_/]+\.ts)`/g)].map((m) => m[1])
  if (files.length === 0) throw new Error("ARCHITECTURE.md: no file is allowed unsafe* between the markers")
  return files
})()

export default tseslint.config(
  { ignores: ["**/dist/**", "**/node_modules/**", "bench/out/**"] },
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error"
    }
  },
  {
    files: ["packages/*/src/**/*.ts"],
    rules: { "no-restricted-syntax": ["error", ...srcRules, ...unsafeRules] }
  },
  {
    files: unsafeAllowed,
    rules: { "no-restricted-syntax": ["error", ...srcRules] }
  }
)
