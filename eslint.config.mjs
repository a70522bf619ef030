// ESLint with the Effect rules: dprint formatting (2 spaces, width 120, no semicolons, double quotes,
// no trailing commas, arrow parens) and typescript-eslint's recommended checks.
import effect from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

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
    rules: {
      "no-restricted-syntax": ["error", {
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
        selector:
          "FunctionDeclaration[async=true], ArrowFunctionExpression[async=true], FunctionExpression[async=true]",
        message: "use Effect.gen"
      }]
    }
  }
)
