// A table row's own action buttons (the Alerts page's Acknowledge and Silence, issue 35 item 4).
// The table is drawn again on every refresh (2 s). When those buttons fed a Dash callback, each
// redraw triggered that callback again and Dash dropped the answer of the one still running: on a
// loaded machine the silence was made but the page never said so. The click is recorded here, at
// the DOM event, in a store outside the table (the button's data-store), which the action's
// callback reads: a redraw can no longer touch it.
(function () {
    "use strict";
    document.addEventListener("click", function (event) {
        const target = event.target instanceof Element ? event.target : null;
        const button = target && target.closest("button[data-row-action]");
        if (!button || !window.dash_clientside || !window.dash_clientside.set_props) {
            return;
        }
        window.dash_clientside.set_props(button.dataset.store, {
            data: { type: button.dataset.rowAction, index: button.dataset.pick, at: Date.now() },
        });
    });
})();
