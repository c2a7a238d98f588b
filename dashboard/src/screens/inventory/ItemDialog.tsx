import { maxListItems, maxTextLength } from "../../../../schema/lib/limits.ts";
import { useMutation } from "../../api/hooks.ts";
import { CreateInventoryItemDocument, UpdateInventoryItemDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog, useDialogDraft } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { TextAreaField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { QUANTITY_PATTERN } from "../../ui/format.ts";
import { CURRENCY_PATTERN, MONEY_PATTERN } from "../../ui/money.ts";
import type { Item } from "./inventory-cells.tsx";
import {
  changedVariables,
  emptySupplier,
  type ItemDraft,
  itemDraft,
  itemParams,
  itemVariables,
  type SupplierDraft,
} from "./item-draft.ts";

const MONEY_HINT = "e.g. 12.50: up to 2 decimals.";
const QUANTITY_HINT = "Up to 3 decimals.";

/** The API's length limits, for the fields to stop there. */
const most = (name: string) => maxTextLength("Mutation.createInventoryItem", name);
const mostOfSupplier = (name: string) => maxTextLength("InventorySupplierInput", name);
const MOST_SUPPLIERS = maxListItems("Mutation.createInventoryItem", "suppliers");

/**
 * Adds an item (`item` null) or edits one: its fields and suppliers. An edit sends only what was
 * changed. The API's refusal of a field is shown under it.
 */
export function ItemDialog({
  open,
  item,
  onClose,
  onSaved,
}: {
  open: boolean;
  item: Item | null;
  onClose(): void;
  onSaved(item: Item): void;
}) {
  // Opened again, or for another item: the form starts from it.
  const [draft, setDraft] = useDialogDraft(open, item?.id, () => itemDraft(item ?? undefined));
  const [create, creating] = useMutation(CreateInventoryItemDocument);
  const [update, updating] = useMutation(UpdateInventoryItemDocument);
  const state = item ? updating : creating;
  const at = (param: string) => fieldError(state.error, param);
  const set = (name: Exclude<keyof ItemDraft, "suppliers">) => (event: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: event.target.value }));
  const setSupplier = (index: number, change: Partial<SupplierDraft>) =>
    setDraft((d) => ({
      ...d,
      suppliers: d.suppliers.map((supplier, i) => (i === index ? { ...supplier, ...change } : supplier)),
    }));

  const close = () => {
    creating.reset();
    updating.reset();
    onClose();
  };
  const submit = async () => {
    const result = item
      ? (await update({ id: item.id, ...changedVariables(item, draft) }))?.updateInventoryItem
      : (await create(itemVariables(draft)))?.createInventoryItem;
    if (!result) return;
    creating.reset();
    updating.reset();
    onSaved(result);
  };

  const title = item ? `Edit ${item.name}` : "Add an inventory item";
  return (
    <Dialog open={open} title={title} onClose={close}>
      <Form onSubmit={submit} aria-label={title}>
        <ErrorBanner error={state.error} fields={itemParams(draft)} />
        <div className="ops-form-grid">
          <TextField
            className="ops-wide"
            label="Name"
            required
            maxLength={most("name")}
            value={draft.name}
            error={at("name")}
            onChange={set("name")}
          />
          <TextField
            label="SKU (optional)"
            maxLength={most("sku")}
            spellCheck={false}
            hint="Unique in the workspace."
            value={draft.sku}
            error={at("sku")}
            onChange={set("sku")}
          />
          <TextField
            label="Category (optional)"
            maxLength={most("category")}
            value={draft.category}
            error={at("category")}
            onChange={set("category")}
          />
          <TextAreaField
            className="ops-wide ops-textarea"
            label="Description (optional)"
            maxLength={most("description")}
            value={draft.description}
            error={at("description")}
            onChange={set("description")}
          />
          <TextField
            label="Quantity in stock"
            required
            inputMode="decimal"
            pattern={QUANTITY_PATTERN}
            hint={QUANTITY_HINT}
            value={draft.quantity}
            error={at("quantity")}
            onChange={set("quantity")}
          />
          <TextField
            label="Unit"
            required
            maxLength={most("unit_of_measure")}
            hint="What one unit is: pcs, kg, m…"
            value={draft.unit_of_measure}
            error={at("unit_of_measure")}
            onChange={set("unit_of_measure")}
          />
          <TextField
            label="Reorder threshold"
            required
            inputMode="decimal"
            pattern={QUANTITY_PATTERN}
            hint="At or below it the item is low on stock."
            value={draft.min_stock_threshold}
            error={at("min_stock_threshold")}
            onChange={set("min_stock_threshold")}
          />
          <TextField
            label="Currency"
            required
            maxLength={3}
            pattern={CURRENCY_PATTERN}
            spellCheck={false}
            autoCapitalize="characters"
            hint="ISO 4217 code, e.g. USD, EUR."
            value={draft.currency}
            error={at("currency")}
            onChange={(event) => setDraft((d) => ({ ...d, currency: event.target.value.toUpperCase() }))}
          />
          <TextField
            label="Unit cost (optional)"
            inputMode="decimal"
            pattern={MONEY_PATTERN}
            hint={MONEY_HINT}
            value={draft.cost_price}
            error={at("cost_price")}
            onChange={set("cost_price")}
          />
          <TextField
            label="Unit price (optional)"
            inputMode="decimal"
            pattern={MONEY_PATTERN}
            hint={MONEY_HINT}
            value={draft.sale_price}
            error={at("sale_price")}
            onChange={set("sale_price")}
          />
        </div>
        {draft.suppliers.map((supplier, i) => (
          <fieldset key={supplier.key} className="inventory-supplier">
            <legend>Supplier {i + 1}</legend>
            <div className="ops-form-grid">
              <TextField
                label="Supplier name"
                required
                maxLength={mostOfSupplier("name")}
                value={supplier.name}
                error={at(`suppliers[${i}].name`)}
                onChange={(event) => setSupplier(i, { name: event.target.value })}
              />
              <TextField
                label="Supplier e-mail (optional)"
                type="email"
                maxLength={mostOfSupplier("email")}
                value={supplier.email}
                error={at(`suppliers[${i}].email`)}
                onChange={(event) => setSupplier(i, { email: event.target.value })}
              />
              <TextField
                label="Supplier phone (optional)"
                type="tel"
                maxLength={mostOfSupplier("phone")}
                value={supplier.phone}
                error={at(`suppliers[${i}].phone`)}
                onChange={(event) => setSupplier(i, { phone: event.target.value })}
              />
              <TextField
                label="Supplier's code (optional)"
                maxLength={mostOfSupplier("supplier_sku")}
                spellCheck={false}
                value={supplier.supplier_sku}
                error={at(`suppliers[${i}].supplier_sku`)}
                onChange={(event) => setSupplier(i, { supplier_sku: event.target.value })}
              />
              <TextField
                label="Supplier's unit cost (optional)"
                inputMode="decimal"
                pattern={MONEY_PATTERN}
                hint={`In ${draft.currency || "the item's currency"}.`}
                value={supplier.cost_price}
                error={at(`suppliers[${i}].cost_price`)}
                onChange={(event) => setSupplier(i, { cost_price: event.target.value })}
              />
            </div>
            <Actions>
              <Button
                variant="link"
                onClick={() => setDraft((d) => ({ ...d, suppliers: d.suppliers.filter((_, j) => j !== i) }))}
              >
                Remove supplier {i + 1}
              </Button>
            </Actions>
          </fieldset>
        ))}
        {draft.suppliers.length < MOST_SUPPLIERS && (
          <div>
            <Button onClick={() => setDraft((d) => ({ ...d, suppliers: [...d.suppliers, emptySupplier()] }))}>
              Add a supplier
            </Button>
          </div>
        )}
        <Actions>
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={state.pending}>
            {item ? "Save changes" : "Add item"}
          </Button>
        </Actions>
      </Form>
    </Dialog>
  );
}
