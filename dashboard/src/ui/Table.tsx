import type { ReactNode } from "react";

export interface Column<Row> {
  header: string;
  cell(row: Row): ReactNode;
  /** Kept on one line (ids, dates). */
  nowrap?: boolean;
}

export interface TableProps<Row> {
  caption: string;
  columns: ReadonlyArray<Column<Row>>;
  rows: ReadonlyArray<Row>;
  rowKey(row: Row): string;
  empty?: ReactNode;
}

/**
 * A data table with a caption. On a phone each row becomes a card of "header: value" lines
 * (styles.css); the explicit roles keep it a table for assistive technology when its CSS display
 * changes. A table still too wide scrolls inside a focusable region, so keyboard users can scroll it.
 */
export function Table<Row>({ caption, columns, rows, rowKey, empty = "Nothing yet." }: TableProps<Row>) {
  if (rows.length === 0) return <p className="empty">{empty}</p>;
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus to be scrolled by keyboard.
    // biome-ignore lint/a11y/useSemanticElements: the scrolling wrapper of a table, not a section of the page.
    <div className="table-scroll" role="region" aria-label={caption} tabIndex={0}>
      <table role="table">
        <caption className="visually-hidden">{caption}</caption>
        <thead role="rowgroup">
          <tr role="row">
            {columns.map((column) => (
              <th key={column.header} scope="col" role="columnheader">
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody role="rowgroup">
          {rows.map((row) => (
            <tr key={rowKey(row)} role="row">
              {columns.map((column) => (
                <td
                  key={column.header}
                  role="cell"
                  className={column.nowrap ? "nowrap" : undefined}
                  data-label={column.header}
                >
                  <div className="cell">{column.cell(row)}</div>
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
