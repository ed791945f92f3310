// safe_calculator: a real expression evaluator (mathjs) with the dangerous functions removed — no JavaScript
// eval, no import/createUnit/parse/evaluate from inside an expression.
import { create, all } from 'mathjs';

const math = create(all!, { number: 'number', precision: 64 });
const limitedEvaluate = math.evaluate.bind(math);
const disabled = (name: string) => () => {
  throw new Error(`Function ${name} is disabled`);
};
math.import(
  {
    import: disabled('import'),
    createUnit: disabled('createUnit'),
    evaluate: disabled('evaluate'),
    parse: disabled('parse'),
    simplify: disabled('simplify'),
    derivative: disabled('derivative'),
    resolve: disabled('resolve'),
    reviver: disabled('reviver'),
    compile: disabled('compile'),
  },
  { override: true },
);

export function calculate(expression: string): { ok: true; result: string } | { ok: false; error: string } {
  if (typeof expression !== 'string' || !expression.trim()) return { ok: false, error: 'expression is required' };
  if (expression.length > 500) return { ok: false, error: 'expression too long' };
  try {
    const v: unknown = limitedEvaluate(expression, {});
    if (typeof v === 'function') return { ok: false, error: 'expression does not evaluate to a value' };
    return { ok: true, result: math.format(v as number, { precision: 14 }) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}
