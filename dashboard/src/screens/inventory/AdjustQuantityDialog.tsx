import { useState } from "react";
import { useMutation } from "../../api/hooks.ts";
import { SetInventoryQuantityDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { formatQuantity, QUANTITY_PATTERN } from "../../ui/format.ts";
import { type Item, StockBadge } from "./inventory-cells.tsx";

/**
 * Sets an item's quantity after a count, a delivery or a sale. The new quantity is what is in
 * stock, not a difference: the API has no relative change, and a difference added to a figure
 * read a while ago would lose what happened in between. The API recomputes the stock status.
 */
export function AdjustQuantityDialog({
  item,
  onClose,
  onDone,
}: {
  item: Item | null;
  onClose(): void;
  onDone(item: Item): void;
}) {
  const [quantity, setQuantity] = useState("");
  const [shownFor, setShownFor] = useState<string | null>(null);
  const [save, state] = useMutation(SetInventoryQuantityDocument);
  if ((item?.id ?? null) !== shownFor) {
    setShownFor(item?.id ?? null);
    setQuantity(item ? String(item.quantity) : "");
  }
  const close = () => {
    state.reset();
    onClose();
  };
  const submit = async () => {
    if (!item) return;
    const result = await save({ id: item.id, quantity: Number(quantity) });
    if (!result) return;
    state.reset();
    onDone(result.updateInventoryItem);
  };
  const title = `Adjust the quantity of ${item?.name ?? "the item"}`;
  return (
    <Dialog open={item !== null} title={title} onClose={close}>
      {item && (
        <Form onSubmit={submit} aria-label={title}>
          <p className="ops-note">
            Now {formatQuantity(item.quantity, item.unit_of_measure)} <StockBadge status={item.status} />{" "}
            <span className="muted">
              Low stock at or below {formatQuantity(item.min_stock_threshold, item.unit_of_measure)}.
            </span>
          </p>
          <ErrorBanner error={state.error} fields={["quantity"]} />
          <TextField
            label={`New quantity (${item.unit_of_measure})`}
            required
            inputMode="decimal"
            pattern={QUANTITY_PATTERN}
            hint="What is in stock now, after the count, delivery or sale. Up to 3 decimals."
            value={quantity}
            error={fieldError(state.error, "quantity")}
            onChange={(event) => setQuantity(event.target.value)}
          />
          <Actions>
            <Button onClick={close}>Cancel</Button>
            <Button type="submit" variant="primary" busy={state.pending}>
              Save quantity
            </Button>
          </Actions>
        </Form>
      )}
    </Dialog>
  );
}
