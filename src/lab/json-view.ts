/** Lines of a value shown before the rest folds away. */
export const FOLD_AFTER_LINES = 30;

/**
 * A value as indented JSON, line breaks kept; past `FOLD_AFTER_LINES` lines the rest
 * sits folded in a <details>, so a long answer does not push everything else away.
 */
export function jsonView(value: unknown): HTMLElement {
  const lines = (JSON.stringify(value, null, 2) ?? 'undefined').split('\n');
  const view = document.createElement('div');
  view.className = 'json';
  const head = document.createElement('pre');
  head.textContent = lines.slice(0, FOLD_AFTER_LINES).join('\n');
  view.append(head);
  if (lines.length > FOLD_AFTER_LINES) {
    const fold = document.createElement('details');
    const summary = document.createElement('summary');
    summary.textContent = `${lines.length - FOLD_AFTER_LINES} more lines`;
    const rest = document.createElement('pre');
    rest.textContent = lines.slice(FOLD_AFTER_LINES).join('\n');
    fold.append(summary, rest);
    view.append(fold);
  }
  return view;
}
