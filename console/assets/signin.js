// Sign-in with a password and sign-out (ADR 052), as Dash clientside callbacks: the password
// goes from this page straight to the admin API (same origin), which answers with the session in
// an HttpOnly cookie no script can read; the tab keeps only the marker "session". Sign-out asks
// the admin API to end the session (with the CSRF token of the readable pushgrid_csrf cookie)
// and clears the cookies.
(function () {
    "use strict";
    const API = "/api/v1/auth";
    const MARKER = "session";

    function problemBox(text) {
        return {
            namespace: "dash_html_components",
            type: "Div",
            props: { className: "alert alert-error", role: "alert", children: text },
        };
    }

    function cookie(name) {
        const found = document.cookie.split("; ").find(function (c) {
            return c.startsWith(name + "=");
        });
        return found ? decodeURIComponent(found.slice(name.length + 1)) : "";
    }

    async function password(clicks, submits, user, secret) {
        const noUpdate = window.dash_clientside.no_update;
        if (!clicks && !submits) {  // the form was just rendered: nothing was asked yet
            return [noUpdate, noUpdate, noUpdate];
        }
        if (!user || !secret) {
            return [noUpdate, noUpdate, [problemBox("enter your user name and password")]];
        }
        let answer;
        try {
            answer = await fetch(API + "/login", {
                method: "POST",
                credentials: "same-origin",
                headers: { "Content-Type": "application/json", "Accept": "application/json" },
                body: JSON.stringify({ username: user.trim(), password: secret }),
            });
        } catch (error) {
            return [noUpdate, noUpdate, [problemBox("the admin API cannot be reached")]];
        }
        let body = {};
        try { body = await answer.json(); } catch (error) { body = {}; }
        if (!answer.ok) {
            const why = body.detail || body.title || ("HTTP " + answer.status);
            return [noUpdate, noUpdate, [problemBox("sign-in refused: " + why)]];
        }
        return [MARKER, { name: body.name, role: body.role, token_id: body.session_id }, []];
    }

    async function signOut(clicks, token) {
        if (!clicks) {
            return [window.dash_clientside.no_update, window.dash_clientside.no_update];
        }
        if (token === MARKER) {
            try {
                await fetch(API + "/logout", {
                    method: "POST",
                    credentials: "same-origin",
                    headers: { "X-CSRF-Token": cookie("pushgrid_csrf") },
                });
            } catch (error) { /* the session ends on its own; the tab forgets it anyway */ }
        }
        return [null, null];
    }

    window.dash_clientside = Object.assign({}, window.dash_clientside, {
        pushgridSignIn: { password: password, signOut: signOut },
    });
})();
