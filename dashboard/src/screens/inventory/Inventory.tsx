import { useState } from "react";
import { useOverrides } from "../../api/overrides.ts";
import { usePaged } from "../../api/paged.ts";
import { DeleteInventoryItemDocument, InventoryItemsDocument } from "../../generated/graphql.ts";
import { Link, useQueryState } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { optionsOf, SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { takeFlash } from "../../ui/flash.ts";
import { formatQuantity } from "../../ui/format.ts";
import { Money } from "../../ui/Money.tsx";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { FilterText } from "../../ui/TextFilter.tsx";
import { AdjustQuantityDialog } from "./AdjustQuantityDialog.tsx";
import { ItemDialog } from "./ItemDialog.tsx";
import {
  CANNOT_WRITE,
  type Item,
  isStockStatus,
  itemPath,
  STOCK_TEXT,
  StockBadge,
  SupplierCell,
} from "./inventory-cells.tsx";
import "../ops.css";
import "./inventory.css";

const FILTERS = ["status", "category", "search"] as const;

const STATUS_OPTIONS = optionsOf(STOCK_TEXT, "Any status");

/** What the API's stock status reads in a notice: "3 pcs, low stock." */
const stockLine = (item: Item) =>
  `${formatQuantity(item.quantity, item.unit_of_measure)}, ${STOCK_TEXT[item.status].toLowerCase()}`;

/**
 * The inventory: items with the stock status the API computes (in stock, low, out), quantity,
 * reorder threshold, cost and price in the item's currency and the first supplier with its
 * contact; filtered by status (one click for "Low stock"), category and a search, all kept in the
 * URL (`?status=&category=&search=`), 25 at a time. Items are added here, their quantity adjusted
 * and deleted; each opens on its own screen to be edited.
 *
 * The API cannot filter by supplier (inventoryItems takes status, category and search, and the
 * search does not look at suppliers), so the list does not offer it.
 */
export default function Inventory() {
  const { can } = useSession();
  const writable = can("inventory.write");
  const [filters, setFilters] = useQueryState(FILTERS);
  const status = isStockStatus(filters.status) ? filters.status : null;
  const items = usePaged(
    InventoryItemsDocument,
    { status, category: filters.category || null, search: filters.search || null },
    (data) => data.inventoryItems,
  );
  const local = useOverrides<Item>();
  const rows = local.apply(items.rows);
  const [notice, setNotice] = useState(takeFlash);
  const [creating, setCreating] = useState(false);
  const [adjusting, setAdjusting] = useState<Item | null>(null);
  const [deleting, setDeleting] = useState<Item | null>(null);
  const filtered = Boolean(status || filters.category || filters.search);
  const lowOnly = status === "low_stock";

  return (
    <Page
      title="Inventory"
      actions={
        <Button
          variant="primary"
          disabled={!writable}
          onClick={() => {
            setNotice("");
            setCreating(true);
          }}
        >
          Add item
        </Button>
      }
    >
      {!writable && <RoleNote>{CANNOT_WRITE}</RoleNote>}
      <Notice>{notice}</Notice>
      <Panel title="Items">
        <search className="ops-filters" aria-label="Filter items">
          <FilterText
            label="Search"
            type="search"
            placeholder="Name, SKU, category…"
            value={filters.search}
            onCommit={(search) => setFilters({ search })}
          />
          <SelectField
            label="Stock status"
            value={status ?? ""}
            options={STATUS_OPTIONS}
            onChange={(event) => setFilters({ status: event.target.value })}
          />
          <FilterText
            label="Category"
            placeholder="Exact category"
            value={filters.category}
            onCommit={(category) => setFilters({ category })}
          />
          <div className="ops-filter-actions">
            <Button
              className="ops-toggle"
              aria-pressed={lowOnly}
              onClick={() => setFilters({ status: lowOnly ? "" : "low_stock" })}
            >
              Low stock
            </Button>
            {filtered && (
              <Button variant="link" onClick={() => setFilters({ status: "", category: "", search: "" })}>
                Clear filters
              </Button>
            )}
          </div>
        </search>
        <ErrorBanner error={items.error} />
        {items.loading && rows.length === 0 && <Loading />}
        {(!items.loading || rows.length > 0) && (
          <div className="ops-table">
            <Table
              caption="Inventory items"
              rows={rows}
              rowKey={(item) => item.id}
              empty={
                filtered
                  ? "No item matches these filters."
                  : writable
                    ? "No items yet. Add the first one."
                    : "No items yet."
              }
              columns={[
                {
                  header: "Item",
                  cell: (item) => (
                    <span className="ops-name">
                      <Link to={itemPath(item.id)}>{item.name}</Link>
                      {(item.sku || item.category) && (
                        <span className="muted">
                          {item.sku && <code>{item.sku}</code>}
                          {item.sku && item.category && " · "}
                          {item.category}
                        </span>
                      )}
                    </span>
                  ),
                },
                { header: "Status", cell: (item) => <StockBadge status={item.status} />, nowrap: true },
                {
                  header: "Quantity",
                  cell: (item) => (
                    <span className="ops-name inventory-quantity">
                      <span>{formatQuantity(item.quantity, item.unit_of_measure)}</span>
                      <span className="muted">
                        Reorder at {formatQuantity(item.min_stock_threshold, item.unit_of_measure)}
                      </span>
                    </span>
                  ),
                },
                {
                  header: "Unit cost",
                  cell: (item) => <Money amount={item.cost_price} currency={item.currency} />,
                },
                {
                  header: "Unit price",
                  cell: (item) => <Money amount={item.sale_price} currency={item.currency} />,
                },
                { header: "Supplier", cell: (item) => <SupplierCell suppliers={item.suppliers} /> },
                {
                  header: "Actions",
                  cell: (item) => (
                    <div className="row-actions">
                      <Button
                        disabled={!writable}
                        onClick={() => {
                          setNotice("");
                          setAdjusting(item);
                        }}
                        aria-label={`Adjust quantity of ${item.name}`}
                      >
                        Adjust quantity
                      </Button>
                      <Button
                        variant="danger"
                        disabled={!writable}
                        onClick={() => {
                          setNotice("");
                          setDeleting(item);
                        }}
                        aria-label={`Delete ${item.name}`}
                      >
                        Delete
                      </Button>
                    </div>
                  ),
                },
              ]}
            />
          </div>
        )}
        {items.hasMore && (
          <Actions>
            <Button busy={items.loading} onClick={items.more}>
              Show more items
            </Button>
          </Actions>
        )}
      </Panel>
      <ItemDialog
        open={creating}
        item={null}
        onClose={() => setCreating(false)}
        onSaved={(item) => {
          setCreating(false);
          setNotice(`${item.name} added: ${stockLine(item)}.`);
          items.restart();
        }}
      />
      <AdjustQuantityDialog
        item={adjusting}
        onClose={() => setAdjusting(null)}
        onDone={(item) => {
          setAdjusting(null);
          local.put(item);
          setNotice(`${item.name}: ${stockLine(item)}.`);
        }}
      />
      <ConfirmDialog
        subject={deleting}
        title="Delete this item?"
        label="Delete item"
        confirm="Delete item"
        mutation={DeleteInventoryItemDocument}
        variables={(item) => ({ id: item.id })}
        onClose={() => setDeleting(null)}
        onDone={(_, item) => {
          setDeleting(null);
          local.remove(item.id);
          setNotice(`${item.name} deleted.`);
        }}
      >
        <p>
          <strong>{deleting?.name}</strong> and its suppliers are deleted for good. This cannot be undone.
        </p>
      </ConfirmDialog>
    </Page>
  );
}
