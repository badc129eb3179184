// The console cannot reach the admin API (issue 34, 4.6): when a request of the console's own
// (a Dash callback, served by the admin API) fails to connect or gets a gateway error, a banner
// says so on every page; the next request that answers takes it down. Dash itself shows nothing
// when its server is gone, so the page kept its last numbers without a word.
(function () {
    "use strict";
    const BANNER_ID = "console-unreachable";
    const TEXT = "the console cannot reach the admin API";
    const original = window.fetch.bind(window);

    function banner(since) {
        let box = document.getElementById(BANNER_ID);
        if (since === null) {
            if (box) { box.remove(); }
            return;
        }
        if (!box) {
            box = document.createElement("div");
            box.id = BANNER_ID;
            box.className = "alert alert-error unreachable-banner";
            box.setAttribute("role", "alert");
            document.body.prepend(box);
        }
        const seconds = Math.round((Date.now() - since) / 1000);
        box.textContent = TEXT + (seconds > 0 ? " (for " + seconds + " s)" : "");
    }

    let failingSince = null;
    function failed() {
        if (failingSince === null) { failingSince = Date.now(); }
        banner(failingSince);
    }

    window.fetch = function (input, init) {
        const url = typeof input === "string" ? input : (input && input.url) || "";
        if (url.indexOf("_dash-") === -1) { return original(input, init); }
        return original(input, init).then(function (response) {
            if (response.status === 502 || response.status === 503 || response.status === 504) {
                failed();
            } else {
                failingSince = null;
                banner(null);
            }
            return response;
        }, function (error) {
            failed();
            throw error;
        });
    };
})();
