import { useState } from "react";
import { useQuery } from "../../api/hooks.ts";
import { DeleteInventoryItemDocument, InventoryItemDocument } from "../../generated/graphql.ts";
import { Link, navigate, useLocation } from "../../router.tsx";
import { routeParam } from "../../routes.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { setFlash } from "../../ui/flash.ts";
import { formatDateTime, formatQuantity } from "../../ui/format.ts";
import { Money } from "../../ui/Money.tsx";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { AdjustQuantityDialog } from "./AdjustQuantityDialog.tsx";
import { ItemDialog } from "./ItemDialog.tsx";
import {
  CANNOT_WRITE,
  INVENTORY_PATH,
  type Item,
  STOCK_TEXT,
  StockBadge,
  SupplierContact,
} from "./inventory-cells.tsx";
import "../ops.css";
import "./inventory.css";

const PATTERN = `${INVENTORY_PATH}/:id`;

/** One inventory item: its fields, its suppliers with their contact and cost, and its edit, quantity and delete. */
export default function InventoryItemScreen() {
  const { path } = useLocation();
  const id = routeParam(PATTERN, path);
  const { can } = useSession();
  const writable = can("inventory.write");
  const query = useQuery(InventoryItemDocument, { id });
  // What a mutation answered, until the query says something newer.
  const [saved, setSaved] = useState<Item | null>(null);
  const fetched = query.data?.inventoryItem ?? null;
  const item =
    saved && saved.id === id && (!fetched || saved.updated_at >= fetched.updated_at) ? saved : fetched;
  const [notice, setNotice] = useState("");
  const [editing, setEditing] = useState(false);
  const [adjusting, setAdjusting] = useState(false);
  const [deleting, setDeleting] = useState(false);

  const done = (next: Item, text: string) => {
    setSaved(next);
    setNotice(text);
  };

  return (
    <Page
      title={item?.name ?? "Inventory item"}
      actions={
        item && (
          <div className="ops-actions">
            <Button
              disabled={!writable}
              onClick={() => {
                setNotice("");
                setAdjusting(true);
              }}
            >
              Adjust quantity
            </Button>
            <Button
              variant="primary"
              disabled={!writable}
              onClick={() => {
                setNotice("");
                setEditing(true);
              }}
            >
              Edit
            </Button>
            <Button variant="danger" disabled={!writable} onClick={() => setDeleting(true)}>
              Delete
            </Button>
          </div>
        )
      }
    >
      <Link to={INVENTORY_PATH} className="ops-back">
        ← All items
      </Link>
      {!writable && <RoleNote>{CANNOT_WRITE}</RoleNote>}
      <Notice>{notice}</Notice>
      <ErrorBanner error={query.error} />
      {!item && !query.error && <Loading />}
      {item && (
        <>
          <Panel title="Stock">
            <dl className="facts ops-facts">
              <div>
                <dt>Status</dt>
                <dd>
                  <StockBadge status={item.status} />
                </dd>
              </div>
              <div>
                <dt>Quantity</dt>
                <dd data-testid="item-quantity">{formatQuantity(item.quantity, item.unit_of_measure)}</dd>
              </div>
              <div>
                <dt>Reorder threshold</dt>
                <dd>{formatQuantity(item.min_stock_threshold, item.unit_of_measure)}</dd>
              </div>
              <div>
                <dt>Unit cost</dt>
                <dd data-testid="item-cost">
                  <Money amount={item.cost_price} currency={item.currency} />
                </dd>
              </div>
              <div>
                <dt>Unit price</dt>
                <dd data-testid="item-price">
                  <Money amount={item.sale_price} currency={item.currency} />
                </dd>
              </div>
              <div>
                <dt>SKU</dt>
                <dd>{item.sku ? <code>{item.sku}</code> : "—"}</dd>
              </div>
              <div>
                <dt>Category</dt>
                <dd>{item.category ?? "—"}</dd>
              </div>
              <div>
                <dt>Updated</dt>
                <dd>{formatDateTime(item.updated_at)}</dd>
              </div>
            </dl>
            {item.description && <p className="inventory-description">{item.description}</p>}
          </Panel>
          <Panel title="Suppliers">
            <Table
              caption={`Suppliers of ${item.name}`}
              rows={item.suppliers}
              rowKey={(supplier) => `${supplier.name}|${supplier.email ?? ""}|${supplier.supplier_sku ?? ""}`}
              empty="No suppliers. Edit the item to add where it can be bought."
              columns={[
                { header: "Supplier", cell: (supplier) => supplier.name },
                { header: "Contact", cell: (supplier) => <SupplierContact supplier={supplier} /> },
                {
                  header: "Their code",
                  cell: (supplier) => (supplier.supplier_sku ? <code>{supplier.supplier_sku}</code> : "—"),
                },
                {
                  header: "Unit cost",
                  cell: (supplier) => <Money amount={supplier.cost_price} currency={item.currency} />,
                },
              ]}
            />
          </Panel>
        </>
      )}
      <ItemDialog
        open={editing}
        item={item}
        onClose={() => setEditing(false)}
        onSaved={(next) => {
          setEditing(false);
          done(next, `${next.name} saved.`);
        }}
      />
      <AdjustQuantityDialog
        item={adjusting ? item : null}
        onClose={() => setAdjusting(false)}
        onDone={(next) => {
          setAdjusting(false);
          done(
            next,
            `Quantity saved: ${formatQuantity(next.quantity, next.unit_of_measure)}, ${STOCK_TEXT[next.status].toLowerCase()}.`,
          );
        }}
      />
      <ConfirmDialog
        subject={deleting ? item : null}
        title="Delete this item?"
        label="Delete item"
        confirm="Delete item"
        mutation={DeleteInventoryItemDocument}
        variables={(subject) => ({ id: subject.id })}
        onClose={() => setDeleting(false)}
        onDone={(_, subject) => {
          setDeleting(false);
          setFlash(`${subject.name} deleted.`);
          navigate(INVENTORY_PATH);
        }}
      >
        <p>
          <strong>{item?.name}</strong> and its suppliers are deleted for good. This cannot be undone.
        </p>
      </ConfirmDialog>
    </Page>
  );
}
